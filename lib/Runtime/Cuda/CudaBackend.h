//===- CudaBackend.h - cuBLASLt, NCCL and stream memory ops ----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA backend: one CudaContext per rank over an NCCL communicator and
// CUDA streams. GEMMs go to cuBLASLt, collectives to NCCL, signal/wait to
// stream memory operations on epoch-counted flags (or spin kernels, or
// events). GPU work cannot time out by itself, so the host side bounds
// every synchronize, names the wait that is stuck, and then releases it by
// writing the flag from the host (the flags live in mapped host memory) so
// that nothing hangs.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_CUDA_CUDABACKEND_H
#define OVERLAP_LIB_RUNTIME_CUDA_CUDABACKEND_H

#include "Context.h"
#include "Driver.h"
#include "Kernels.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace overlap {
namespace cuda {

/// "cudaErrorInvalidValue (invalid argument)" etc.
std::string describe(cudaError_t error);
std::string describe(CUresult result);
std::string describe(cublasStatus_t status);
std::string describe(ncclResult_t result);

/// Options with the defaults and the environment resolved.
struct Options {
  int numStreams = 2;
  int64_t waitTimeoutMs = 10000;
  int sync = OVERLAP_CUDA_SYNC_MEMOP;
  size_t workspaceBytes = size_t(32) << 20;
  bool allowTf32 = false;
  bool loopBroadcast = false;
};

/// Resolves `opts` (may be null) and the environment; on a malformed value
/// returns false with the reason in `error`.
bool resolveOptions(const overlap_cuda_options *opts, Options &out,
                    std::string &error);

struct CudaGroup : overlap_group {
  ncclComm_t comm = nullptr;
  bool owned = false; // made by a split (or a bootstrap): ours to destroy
};

struct CudaSignals : overlap_signals {
  uint32_t *hostFlags = nullptr;   // mapped host memory, read by the host
  uint32_t *deviceFlags = nullptr; // the same memory, as the GPU sees it
  std::vector<cudaEvent_t> events; // event mode
  std::vector<uint64_t> recorded;  // event mode: epoch of the last record
};

/// A wait enqueued on a stream that the host has not yet seen satisfied.
struct PendingWait {
  CudaSignals *sigs;
  int32_t index;
  uint32_t epoch;
};

/// Key of the cuBLASLt algorithm cache.
using GemmKey =
    std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
               int64_t, int64_t, int64_t, int64_t, unsigned>;

class CudaContext final : public overlap_context {
public:
  CudaContext(int rank, int size, int device, const Options &options);
  ~CudaContext() override;

  /// Second construction step: streams, cuBLASLt, the world communicator.
  /// `streams` holds the caller's compute/comm streams (null: make them).
  overlap_status init(ncclComm_t world, bool ownWorld, cudaStream_t compute,
                      cudaStream_t comm, std::string &error);
  /// Drains the streams and frees everything; returns the final status.
  overlap_status shutdown();

  const int device;
  const Options options;

  cudaStream_t stream(int index) const { return streams_[index]; }
  ncclComm_t commOf(overlap_group *group) const {
    return static_cast<CudaGroup *>(group)->comm;
  }

  overlap_group *worldGroup() override { return &world_; }
  overlap_status synchronize(int stream) override;
  overlap_status split(overlap_group *parent, int color, int key,
                       overlap_group **group) override;
  void destroyGroup(overlap_group *group) override;
  overlap_status createSignals(int32_t n, overlap_signals **sigs) override;
  void destroySignals(overlap_signals *sigs) override;
  overlap_status gemm(const runtime::Site &site,
                      const runtime::GemmArgs &args) override;
  overlap_status collective(const runtime::Site &site, overlap_group *group,
                            const runtime::CollectiveArgs &args) override;
  overlap_status pack(const runtime::Site &site,
                      const runtime::PackArgs &args) override;
  overlap_status copy(const runtime::Site &site, void *dst, const void *src,
                      size_t bytes) override;
  overlap_status hostFunc(const runtime::Site &site, void (*fn)(void *),
                          void *user) override;
  overlap_status signal(const runtime::Site &site, overlap_signals *sigs,
                        int32_t index) override;
  overlap_status wait(const runtime::Site &site, overlap_signals *sigs,
                      int32_t index) override;
  overlap_status alloc(size_t bytes, void **ptr) override;
  void free(void *ptr) override;

  /// Records a failed library call: OVERLAP_ERROR_BACKEND with
  /// "call: rank R, stream S, tile T: cudaFoo failed: <error>".
  overlap_status failCall(const runtime::Site &site, const char *api,
                          const std::string &error,
                          overlap_status status = OVERLAP_ERROR_BACKEND);
  overlap_status check(const runtime::Site &site, const char *api,
                       cudaError_t error) {
    return error == cudaSuccess ? OVERLAP_SUCCESS
                                : failCall(site, api, describe(error));
  }
  overlap_status check(const runtime::Site &site, const char *api,
                       CUresult result) {
    return result == CUDA_SUCCESS ? OVERLAP_SUCCESS
                                  : failCall(site, api, describe(result));
  }
  overlap_status check(const runtime::Site &site, const char *api,
                       cublasStatus_t status) {
    return status == CUBLAS_STATUS_SUCCESS
               ? OVERLAP_SUCCESS
               : failCall(site, api, describe(status));
  }
  overlap_status check(const runtime::Site &site, const char *api,
                       ncclResult_t result) {
    return result == ncclSuccess ? OVERLAP_SUCCESS
                                 : failCall(site, api, describe(result));
  }

protected:
  void onFail() override;

private:
  /// A spin wait that gave up, as an error (after the fact).
  overlap_status checkSpinError();
  /// Names the wait of `stream` whose flag is behind, if any.
  bool findStuckWait(int stream, std::string &text, int32_t &flag);
  /// Writes every pending wait's epoch into its flag so the streams drain.
  void releasePendingWaits();
  /// Polls the streams in `which` until idle, an error, or the deadline.
  overlap_status drain(const std::vector<int> &which, const char *call);
  void *workspace(int stream, size_t &bytes);

  CudaGroup world_;
  std::vector<cudaStream_t> streams_;
  std::vector<bool> ownedStreams_;
  cublasLtHandle_t lt_ = nullptr;
  std::vector<void *> workspaces_; // per stream, made on first GEMM
  std::map<GemmKey, cublasLtMatmulAlgo_t> algos_;
  std::vector<std::unique_ptr<CudaGroup>> groups_;
  std::vector<std::unique_ptr<CudaSignals>> signals_;
  std::vector<std::vector<PendingWait>> pending_; // per stream
  SpinError *spinHost_ = nullptr, *spinDevice_ = nullptr;
  int *barrierScratch_ = nullptr;
  bool ready_ = false; // init completed
  bool shutDown_ = false;
};

/// The CudaContext behind `ctx`, or null if it is not one (a registry of
/// live CUDA contexts, so that host contexts are told apart without RTTI).
CudaContext *asCuda(overlap_context *ctx);

/// Records `text` as this thread's overlap_cuda_create_error() and returns
/// `status`: how every creation function fails.
overlap_status createFailed(overlap_status status, const std::string &text);

} // namespace cuda
} // namespace overlap

#endif // OVERLAP_LIB_RUNTIME_CUDA_CUDABACKEND_H

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
  /// SMs kept for communication; 0: none.
  int commSms = OVERLAP_CUDA_DEFAULT_COMM_SMS;
  bool commPriority = true;
  bool deviceFlags = true;
  bool gemmCache = true;
  /// Heuristic results timed per new GEMM shape; 1: take the first.
  int gemmAutotune = 1;
  bool streamOrderedAlloc = true;
  /// NCCL's CTA limits follow commSms (nccl_cta_cap).
  bool ncclCtaCap = true;
  /// All-gathers on NCCL's copy engines (zero_sm_all_gather).
  bool zeroSmAllGather = false;
  /// overlap_cuda_options.init_timeout_ms (0: the caller's bound).
  int64_t initTimeoutMs = 0;
};

/// Resolves `opts` (may be null) and the environment; on a malformed value
/// returns false with the reason in `error`. (Options.cpp; no CUDA call.)
bool resolveOptions(const overlap_cuda_options *opts, Options &out,
                    std::string &error);

/// CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET for tile GEMMs: the SMs left after
/// `commSms`, at least 1; 0 (leave the attribute unset) when nothing is
/// reserved or the SM count is unknown.
int gemmSmTarget(int smCount, int commSms);

/// The SM target of one overlap_gemm: `tileTarget` (gemmSmTarget) for a
/// tile of a decomposed op (`tile` >= 0: it may run while communication is
/// in flight), 0 (every SM) for a GEMM that runs alone (`tile` -1: a serial
/// GEMM, a baseline, a GEMM outside an overlapped region or one that the
/// compiler found no collective beside) and for every GEMM of a one-rank
/// world (`worldSize` 1: no communication crosses a link there; a
/// reference or single-GPU run would only lose SMs).
int gemmSmTargetFor(int64_t tile, int tileTarget, int worldSize);

/// The NCCL configuration of the communicators a context creates: CTAs
/// limited to the communication budget (minCTAs 1, maxCTAs = commSms, a
/// CGA cluster that divides it, at most 4), NCCL's defaults when commSms
/// is 0. Blocking, so that creation and splits return when done.
/// splitShare = 1: NCCL lets the children of ncclCommSplit share a
/// parent's resources only when the parent was created with it.
ncclConfig_t ncclConfigFor(int commSms);

/// The configuration of a sub-group's ncclCommSplit: ncclConfigFor, and
/// splitShare = 1, so that the child shares the parent's internal
/// resources instead of allocating its own for each grid axis.
ncclConfig_t ncclSplitConfigFor(int commSms);

/// The two above for a context's options: NCCL's defaults when the CTA cap
/// is off (ncclCtaCap false), the budget's limits otherwise.
ncclConfig_t ncclConfigFor(const Options &options);
ncclConfig_t ncclSplitConfigFor(const Options &options);

/// How long an ncclCommSplit may block before its parent communicator is
/// aborted (CudaContext::boundedSplit): the larger of wait_timeout_ms and
/// $OVERLAP_BOOTSTRAP_TIMEOUT_MS (60000 when unset), since a split meets
/// every rank as the bootstrap does.
int64_t splitTimeoutMs(const Options &options);

//===- Zero-SM all-gather: the decisions that make no CUDA call ----------===//

/// Whether the zero-SM path may serve a collective of `kind`: all-gathers
/// only (NCCL's zero-CTA policy runs no reduction).
bool zeroSmAppliesTo(runtime::CollectiveKind kind);

/// Bytes of the staging window of an all-gather of `count` elements of
/// `elemBytes` over `groupSize` ranks: the gathered output, rounded up to
/// NCCL_WIN_REQUIRED_ALIGNMENT. 0 when it overflows size_t.
size_t zeroSmWindowBytes(int groupSize, size_t count, size_t elemBytes);

/// Why the zero-SM path cannot run with NCCL `compiledNccl` (the headers'
/// NCCL_VERSION_CODE), `loadedNccl` (ncclGetVersion) and CUDA driver
/// `driverVersion` (cudaDriverGetVersion); "" when nothing rules it out.
std::string zeroSmPrerequisiteProblem(int compiledNccl, int loadedNccl,
                                      int driverVersion);

/// This host's key for the one-node check of the zero-SM path: 31 bits of
/// a hash of `hostname`, the same on every rank of one node.
int zeroSmNodeKey(const std::string &hostname);

/// Why the zero-SM path cannot run in a group whose ranks' node keys
/// range from `lowest` to `highest`: "" on one node. NCCL runs the
/// zero-CTA all-gather on the copy engines within one node only; across
/// nodes it would run CTAs without an error, uncapped, beside the GEMM.
std::string zeroSmLocalityProblem(int lowest, int highest);

/// The one-line reason a group records when its zero-SM path is disabled:
/// "<step> failed: <error>; plain ncclAllGather".
std::string zeroSmFallbackReason(const std::string &step,
                                 const std::string &error);

/// The configuration of the zero-CTA communicator split from a group's:
/// blocking, splitShare = 1, CTAPolicy = NCCL_CTA_POLICY_ZERO (NCCL >=
/// 2.28; before, the plain split configuration), and the budget's CTA cap
/// (maxCTAs = commSms and its CGA cluster, as ncclConfigFor; none when
/// commSms is 0): NCCL runs zero CTAs only where it can, CTAs elsewhere.
/// No minCTAs (one would ask for a CTA the copy engines do not need).
ncclConfig_t zeroSmSplitConfig(int commSms);
/// The above for a context's options (no cap when ncclCtaCap is off).
ncclConfig_t zeroSmSplitConfig(const Options &options);

/// The settings as one line (overlap_cuda_describe).
std::string describeOptions(const Options &options, int smCount, int gemmSms,
                            int commPriority, int computePriority);

/// The software a measurement ran on, one line (part of
/// overlap_cuda_describe, so of every profile's provenance and every CSV's
/// "# runtime:" line): "driver 13.0, CUDA runtime 13.0, NCCL 2.28.9 (built
/// with 2.28.3), cuBLASLt 13.1.0". From cudaDriverGetVersion,
/// cudaRuntimeGetVersion, ncclGetVersion, NCCL_VERSION_CODE and
/// cublasLtGetVersion; a value <= 0 is "unknown".
std::string describeVersions(int driver, int runtime, int loadedNccl,
                             int compiledNccl, long long cublasLt);

/// What the zero-SM all-gather keeps for one (group, stream)
/// (ZeroSmAllGather.cpp).
struct ZeroSmStream {
  ncclComm_t comm = nullptr; // split with CTAPolicy = NCCL_CTA_POLICY_ZERO
  void *buffer = nullptr;    // ncclMemAlloc'd staging buffer
  size_t bytes = 0;          // its size, registered as one symmetric window
  void *window = nullptr;    // the ncclWindow_t (NCCL >= 2.28)
  /// A collective setup step failed on some rank: abort the communicator,
  /// never deregister (the other ranks may not have registered).
  bool broken = false;
};

struct CudaGroup : overlap_group {
  ncclComm_t comm = nullptr;
  bool owned = false; // made by a split (or a bootstrap): ours to destroy
  /// The zero-SM all-gather's resources, by stream index.
  std::map<int, ZeroSmStream> zeroSm;
  /// Non-empty: the zero-SM path is disabled in this group, and why.
  std::string zeroSmFallback;
};

struct CudaSignals : overlap_signals {
  /// Host-mapped flags (options.deviceFlags off): the host reads and writes
  /// them directly; null for flags in device memory.
  uint32_t *hostFlags = nullptr;
  /// The flags as the GPU sees them: device memory, or the mapped pointer
  /// of hostFlags.
  uint32_t *deviceFlags = nullptr;
  /// Flags in device memory: pinned host words the host's copies go
  /// through, `count` for reads then `count` for writes (one per flag, so
  /// that a write whose copy is still queued is never overwritten). A copy
  /// between device and pageable memory returns only when done, which
  /// would put a stuck device's hang before the wait bound.
  uint32_t *stage = nullptr;
  std::vector<cudaEvent_t> events; // event mode
  std::vector<uint64_t> recorded;  // event mode: epoch of the last record
};

/// A wait enqueued on a stream that the host has not yet seen satisfied.
struct PendingWait {
  CudaSignals *sigs;
  int32_t index;
  uint32_t epoch;
};

/// Key of the cuBLASLt plan cache: types, batch, shape, leading
/// dimensions, batch strides, the pointers' alignments (which restrict
/// the algorithms cuBLASLt may pick) and the SM target (an attribute of the
/// matmul descriptor; 0: every SM).
using GemmKey =
    std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
               int64_t, int64_t, int64_t, int64_t, unsigned, int, int>;

/// The largest power of two up to 16 that divides the address.
unsigned pointerAlignment(const void *p);

/// The cache key of a GEMM run as `batch` strided matrices (1 when the
/// batch loops over calls) with SM target `smTarget` (gemmSmTargetFor).
GemmKey gemmKey(const runtime::GemmArgs &args, int64_t batch, int smTarget);

/// cuBLASLt descriptors of one GEMM shape, destroyed with the object.
struct GemmDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  GemmDescriptors() = default;
  GemmDescriptors(const GemmDescriptors &) = delete;
  GemmDescriptors &operator=(const GemmDescriptors &) = delete;
  ~GemmDescriptors();
};

/// What the context keeps per GEMM shape.
struct GemmPlan {
  /// Null when the descriptor cache is off (made again on every call).
  std::unique_ptr<GemmDescriptors> descriptors;
  cublasLtMatmulAlgo_t algo = {};
  /// How the algorithm was chosen, for overlap_cuda_gemm_report.
  std::string note;
};

class ZeroSmNccl;

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
#define OVERLAP_CONTEXT_OP(Result, Name, Parameters)                           \
  Result Name Parameters override;
#include "ContextInterface.def"
  overlap_status joinStreams() override;
  /// Stream-ordered memory (overlap_alloc_async / overlap_free_async):
  /// `stream` < 0 means usable by (done on) every stream.
  overlap_status allocAsync(int stream, size_t bytes, void **ptr) override;
  overlap_status freeAsync(int stream, void *ptr) override;
  /// Records a failed kernel launch of the mgpu* wrappers (sticky; the next
  /// synchronize reports it).
  void launchFailed(const std::string &kernel, const std::string &error,
                    int stream);
  /// The index of `s` among the context's streams, or -1.
  int streamIndex(cudaStream_t s) const;
  std::string describeSettings() const;
  std::string gemmReport() const;
  /// ncclCommSplit of `parent` with a deadline (splitTimeoutMs) when the
  /// context owns the parent: a rank that never splits would block it for
  /// ever. The split runs on a thread of its own (runtime::callWithin); at
  /// the deadline it is left there, `timedOut` is the context's sticky
  /// OVERLAP_ERROR_TIMEOUT naming the call, and every communicator of the
  /// context is abandoned (strandCommunicators): none is aborted beside the
  /// blocked split, which NCCL forbids.
  ncclResult_t boundedSplit(const runtime::Site &site, overlap_group *parent,
                            int color, int key, ncclComm_t *made,
                            ncclConfig_t *config, overlap_status &timedOut);
  /// The zero-SM all-gather (options.zeroSmAllGather): sets `handled` when
  /// it enqueued the all-gather; otherwise (set-up failed, recorded in the
  /// group) the caller runs the plain ncclAllGather.
  overlap_status zeroSmAllGather(const runtime::Site &site, CudaGroup &group,
                                 const runtime::CollectiveArgs &args,
                                 ncclDataType_t type, bool &handled);
  /// Forgets every communicator of the context (world, groups, zero-SM),
  /// their windows and window memory, without a call on any: what a split
  /// left blocked on another thread may still use (boundedSplit).
  void strandCommunicators();
  /// Knob on and no group fell back (overlap_cuda_zero_sm_all_gather).
  bool zeroSmActive() const {
    return options.zeroSmAllGather && !zeroSmFellBack_;
  }

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
  friend class ZeroSmNccl; // the zero-SM set-up steps over NCCL

  /// A spin wait that gave up, as an error (after the fact).
  overlap_status checkSpinError();
  /// Names the wait of `stream` whose flag is behind, if any.
  bool findStuckWait(int stream, std::string &text, int32_t &flag);
  /// Writes every pending wait's epoch into its flag so the streams drain.
  void releasePendingWaits();
  /// Polls the streams in `which` until idle, an error, or the deadline.
  overlap_status drain(const std::vector<int> &which, const char *call);
  void *workspace(int stream, size_t &bytes);
  /// Makes the matmul descriptor (with `smTarget`, 0: none) and the three
  /// layouts of `args`.
  overlap_status makeDescriptors(const runtime::Site &site,
                                 const runtime::GemmArgs &args, int32_t batch,
                                 int smTarget, GemmDescriptors &d);
  /// Chooses the algorithm of a new shape (the heuristic's first, or the
  /// fastest of its top k timed once).
  overlap_status chooseAlgorithm(const runtime::Site &site,
                                 const runtime::GemmArgs &args, int32_t batch,
                                 const GemmDescriptors &d, void *ws,
                                 size_t wsBytes, GemmPlan &plan);
  /// Flags [first, first + count) of `sigs` as the host reads them (device
  /// flags: one copy on the control stream; all 0 if it fails).
  void readFlags(CudaSignals *sigs, int32_t first, int32_t count,
                 uint32_t *out);
  uint32_t readFlag(CudaSignals *sigs, int32_t index) {
    uint32_t value = 0;
    readFlags(sigs, index, 1, &value);
    return value;
  }
  /// Frees the flags and events of a signal set.
  void releaseSignals(CudaSignals &sigs);
  void writeFlag(CudaSignals *sigs, int32_t index, uint32_t value);
  /// Waits for the control stream (the flag copies above) at most the wait
  /// timeout: false when it failed or did not finish (a device that hangs
  /// must not hang the host thread that reads a flag).
  bool syncControl();
  /// Disables the zero-SM path of `group`, recording `reason` (warned
  /// once on stderr).
  void zeroSmDisable(CudaGroup &group, const std::string &reason);
  /// The smallest `value` of any rank of `comm`: a min all-reduce on
  /// `stream` that the host waits for (bounded). A failed agreement sets
  /// `why`; a stuck stream is the context's error.
  overlap_status zeroSmAgreeMin(ncclComm_t comm, int stream, int value,
                                int &lowest, std::string &why);
  /// Deregisters the windows, destroys (aborts) the zero-CTA
  /// communicators and frees the buffers (`freeMemory`) of `group`.
  void zeroSmRelease(CudaGroup &group, bool abort, bool freeMemory);
  /// "; zero-sm all-gather fallback in world: ..." for each group that
  /// fell back.
  std::string zeroSmReport() const;
  /// "world" or "group #i (N ranks)".
  std::string groupName(const CudaGroup &group) const;
  /// The world and every split group.
  std::vector<CudaGroup *> allGroups() {
    std::vector<CudaGroup *> all{&world_};
    for (auto &g : groups_)
      all.push_back(g.get());
    return all;
  }
  /// Every stream in `to` waits for the work enqueued so far on `from`.
  overlap_status order(const std::vector<int> &from, const std::vector<int> &to,
                       const char *call);
  /// Zeroes `bytes` of device memory before any later work of the context
  /// can touch them: cudaMemsetAsync on the control stream, then every
  /// stream of the context waits for it. (`what` names the memory in
  /// errors.)
  overlap_status zeroForStreams(const runtime::Site &site, void *ptr,
                                size_t bytes, const char *what);

  CudaGroup world_;
  std::vector<cudaStream_t> streams_;
  std::vector<bool> ownedStreams_;
  cublasLtHandle_t lt_ = nullptr;
  std::vector<void *> workspaces_; // per stream, made on first GEMM
  std::map<GemmKey, GemmPlan> gemms_;
  int smCount_ = 0;
  /// CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET of tile GEMMs; 0: unset.
  int gemmSms_ = 0;
  int commPriority_ = 0, computePriority_ = 0;
  cudaStream_t control_ = nullptr;      // host reads/writes of device flags
  cudaEvent_t zeroed_ = nullptr;        // zeroForStreams: the memset is done
  std::vector<cudaEvent_t> joinEvents_; // one per stream
  std::vector<int> everyStream_;        // 0 .. numStreams - 1
  cudaMemPool_t pool_ = nullptr;        // stream-ordered allocations
  std::vector<std::unique_ptr<CudaGroup>> groups_;
  std::vector<std::unique_ptr<CudaSignals>> signals_;
  std::vector<std::vector<PendingWait>> pending_; // per stream
  SpinError *spinHost_ = nullptr, *spinDevice_ = nullptr;
  int *barrierScratch_ = nullptr;
  int *zeroSmFlag_ = nullptr;     // device int of zeroSmAgree
  int *zeroSmHostFlag_ = nullptr; // pinned int it is read back into
  bool zeroSmFellBack_ = false;   // some group disabled the path
  bool commsStranded_ = false;    // strandCommunicators ran
  bool ready_ = false;            // init completed
  bool shutDown_ = false;
};

/// The CudaContext behind `ctx`, or null if it is not one (a registry of
/// live CUDA contexts, so that host contexts are told apart without RTTI).
CudaContext *asCuda(overlap_context *ctx);

/// Records a failed kernel launch of the mgpu* wrappers in the context that
/// owns `stream` (its sticky status: the next synchronize reports it,
/// naming the kernel). Returns false when no live context owns the stream.
bool recordLaunchFailure(cudaStream_t stream, const std::string &kernel,
                         const std::string &error);

/// Records `text` as this thread's overlap_cuda_create_error() and returns
/// `status`: how every creation function fails.
overlap_status createFailed(overlap_status status, const std::string &text);

/// Finishes a creation: the context over `comm` (destroyed with it when
/// `ownComm`) and the streams (made when null). CudaContext.cpp.
overlap_status finishCreate(ncclComm_t comm, bool ownComm, int device,
                            cudaStream_t compute, cudaStream_t commStream,
                            const Options &options, overlap_context **ctx);

/// overlap_cuda_context_create_rank with ncclCommInitRankConfig bounded by
/// `initTimeoutMs` (0: unbounded): at the timeout OVERLAP_ERROR_TIMEOUT,
/// saying that a peer failed before joining or never started.
overlap_status createRankContext(const uint8_t id[OVERLAP_CUDA_UNIQUE_ID_BYTES],
                                 int ranks, int rank, int device,
                                 const overlap_cuda_options *opts,
                                 int64_t initTimeoutMs, overlap_context **ctx);

/// $OVERLAP_INIT_TIMEOUT_MS (ms, 0: unbounded), else `fallback`.
/// (InitRank.cpp, with createRankContext.)
int64_t initTimeoutMs(int64_t fallback);

} // namespace cuda
} // namespace overlap

#endif // OVERLAP_LIB_RUNTIME_CUDA_CUDABACKEND_H

//===- InitRank.cpp - A rank's context, with a bounded NCCL init -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// overlap_cuda_context_create_rank's creation with ncclCommInitRankConfig
// bounded in time: NCCL's init has no timeout, so a rank whose peer failed
// before joining (or never started) would block for ever. Launched contexts
// (Launched.cpp) bound it; a framework's own id is bounded by
// overlap_cuda_options.init_timeout_ms (overlap.jax.jit passes one), else
// unbounded unless OVERLAP_INIT_TIMEOUT_MS says otherwise (docs/cuda.md).
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

using namespace overlap;
using namespace overlap::cuda;

/// ncclCommInitRankConfig, bounded by `timeoutMs` (0: unbounded). NCCL's
/// init has no timeout: a peer that failed before joining, or never
/// started, would leave this rank blocked for ever. The call runs on a
/// helper thread (on `device`); at the timeout this rank gives up with
/// `timedOut` set and the thread is left behind, blocked in NCCL (the
/// process is expected to exit on the error; a late communicator leaks).
static ncclResult_t initRankBounded(ncclComm_t *comm, int ranks,
                                    ncclUniqueId uid, int rank, int device,
                                    ncclConfig_t config, int64_t timeoutMs,
                                    bool &timedOut) {
  timedOut = false;
  if (timeoutMs <= 0)
    return ncclCommInitRankConfig(comm, ranks, uid, rank, &config);
  struct State {
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    ncclResult_t result = ncclInternalError;
    ncclComm_t comm = nullptr;
  };
  auto state = std::make_shared<State>();
  std::thread([state, ranks, uid, rank, device, config]() mutable {
    ncclComm_t made = nullptr;
    ncclResult_t r = ncclInternalError;
    if (cudaSetDevice(device) == cudaSuccess)
      r = ncclCommInitRankConfig(&made, ranks, uid, rank, &config);
    std::lock_guard<std::mutex> lock(state->mutex);
    state->result = r;
    state->comm = made;
    state->finished = true;
    state->done.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(state->mutex);
  if (!state->done.wait_for(lock, std::chrono::milliseconds(timeoutMs),
                            [&] { return state->finished; })) {
    timedOut = true;
    return ncclInternalError;
  }
  *comm = state->comm;
  return state->result;
}

overlap_status overlap::cuda::createRankContext(
    const uint8_t id[OVERLAP_CUDA_UNIQUE_ID_BYTES], int ranks, int rank,
    int device, const overlap_cuda_options *opts, int64_t initTimeoutMs,
    overlap_context **ctx) {
  const char *call = "overlap_cuda_context_create_rank: ";
  if (!ctx)
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT,
                        std::string(call) + "null result pointer");
  *ctx = nullptr;
  if (!id || ranks < 1 || rank < 0 || rank >= ranks || device < 0)
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT,
                        std::string(call) + "bad id, ranks (" +
                            std::to_string(ranks) + "), rank (" +
                            std::to_string(rank) + ") or device (" +
                            std::to_string(device) + ")");
  Options options;
  std::string error;
  if (!resolveOptions(opts, options, error))
    return createFailed(OVERLAP_ERROR_INVALID_ARGUMENT, call + error);
  if (cudaError_t e = cudaSetDevice(device))
    return createFailed(OVERLAP_ERROR_BACKEND,
                        call + std::string("cudaSetDevice failed: ") +
                            describe(e));
  ncclUniqueId uid;
  std::memcpy(&uid, id, sizeof(uid));
  ncclComm_t comm = nullptr;
  // The caller's own bound (overlap.jax.jit's init_timeout_ms) wins over
  // the one the creation function chose ($OVERLAP_INIT_TIMEOUT_MS or none).
  if (options.initTimeoutMs > 0)
    initTimeoutMs = options.initTimeoutMs;
  ncclConfig_t config = ncclConfigFor(options);
  bool timedOut = false;
  if (ncclResult_t r = initRankBounded(&comm, ranks, uid, rank, device, config,
                                       initTimeoutMs, timedOut)) {
    if (timedOut)
      return createFailed(
          OVERLAP_ERROR_TIMEOUT,
          call + std::string("rank ") + std::to_string(rank) + " of " +
              std::to_string(ranks) + ": ncclCommInitRankConfig did not " +
              "complete within " + std::to_string(initTimeoutMs) +
              " ms: a peer failed before joining or never started (its "
              "own error says why); overlap_cuda_options.init_timeout_ms "
              "or OVERLAP_INIT_TIMEOUT_MS sets the bound");
    return createFailed(OVERLAP_ERROR_BACKEND,
                        call + std::string("ncclCommInitRankConfig failed: ") +
                            describe(r));
  }
  return finishCreate(comm, true, device, nullptr, nullptr, options, ctx);
}

int64_t overlap::cuda::initTimeoutMs(int64_t fallback) {
  const char *text = std::getenv("OVERLAP_INIT_TIMEOUT_MS");
  if (!text || !*text)
    return fallback;
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  return (end && !*end && v >= 0) ? int64_t(v) : fallback;
}

//===- Timing.cpp - Device-event timing of enqueued work -------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/Timing.h"

#include "overlap/Calibration/MeasuringContext.h"
#include "overlap/Calibration/Repetitions.h"

#include "CudaCheck.h"
#include "Gate.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace overlap;
using namespace overlap::calibration;

namespace {
/// How long a gate waits for the host before it lets the work run anyway.
constexpr uint64_t kGateBoundNs = 200'000'000;

/// The process's gate (pinned, mapped words: the host's and the device's
/// view), made on first use; empty when OVERLAP_TIMING_GATE=0 turns it off
/// (the start event then precedes the host's enqueue, as before the gate),
/// or once a CUDA call for it failed (said once; the timing goes on).
struct Gate {
  GateWords *host = nullptr, *device = nullptr;
};

/// Turns the gate off for the rest of the process after `e`.
Gate dropGate(Gate &gate, cudaError_t e, const char *what) {
  (void)cudaGetLastError();
  printDiagnostic("warning",
                  "timing gate off (%s: %s): the timed windows include "
                  "the host's enqueue time\n",
                  what, cudaGetErrorString(e));
  return gate = Gate();
}

Gate &theGate() {
  static Gate gate = [] {
    Gate made;
    const char *env = std::getenv("OVERLAP_TIMING_GATE");
    if (env && std::strcmp(env, "0") == 0)
      return made;
    void *host = nullptr;
    if (cudaError_t e =
            cudaHostAlloc(&host, sizeof(GateWords),
                          cudaHostAllocMapped | cudaHostAllocPortable))
      return dropGate(made, e, "cudaHostAlloc");
    std::memset(host, 0, sizeof(GateWords));
    made.host = static_cast<GateWords *>(host);
    if (cudaError_t e = cudaHostGetDevicePointer(
            reinterpret_cast<void **>(&made.device), host, 0))
      return dropGate(made, e, "cudaHostGetDevicePointer");
    // Loaded now, not at its first launch (lazy loading).
    if (cudaError_t e = preloadGateKernel())
      return dropGate(made, e, "cudaFuncGetAttributes (the gate kernel)");
    return made;
  }();
  return gate;
}

void setOpen(GateWords *words, int32_t value) {
  __atomic_store_n(const_cast<int32_t *>(&words->open), value,
                   __ATOMIC_SEQ_CST);
}
} // namespace

namespace {
/// A repetition's steps over CUDA events, the gate and overlap_barrier.
class CudaRepetition final : public RepetitionSteps {
public:
  CudaRepetition(overlap_context *ctx, int startStream, int endStream,
                 const std::function<void()> &work)
      : ctx(ctx), startStream(startStream), endStream(endStream), work(work) {
    s0 = static_cast<cudaStream_t>(overlap_cuda_stream(ctx, startStream));
    s1 = static_cast<cudaStream_t>(overlap_cuda_stream(ctx, endStream));
    checkCuda(cudaEventCreate(&start), "cudaEventCreate");
    checkCuda(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~CudaRepetition() override {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  std::vector<double> times;

  void synchronize() override {
    check(ctx, overlap_context_synchronize(ctx), "synchronize");
  }
  bool closeGate() override {
    GateWords *gate = theGate().host;
    if (!gate)
      return false;
    setOpen(gate, 0);
    if (cudaError_t e = launchGateKernel(theGate().device, kGateBoundNs, s0)) {
      dropGate(theGate(), e, "the gate kernel's launch");
      return false;
    }
    return true;
  }
  void barrier() override {
    check(ctx, overlap_barrier(ctx, startStream, -1, nullptr),
          "overlap_barrier");
  }
  void recordStart() override {
    checkCuda(cudaEventRecord(start, s0), "cudaEventRecord");
    if (startStream != endStream)
      checkCuda(cudaStreamWaitEvent(s1, start, 0), "cudaStreamWaitEvent");
  }
  void enqueue() override { work(); }
  void recordStop() override {
    checkCuda(cudaEventRecord(stop, s1), "cudaEventRecord");
  }
  void openGate() override {
    if (GateWords *gate = theGate().host)
      setOpen(gate, 1);
  }
  void collect(bool timed) override {
    check(ctx, overlap_context_synchronize(ctx), "synchronize");
    float ms = 0;
    checkCuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (timed)
      times.push_back(double(ms) * 1000.0);
  }

private:
  overlap_context *ctx;
  int startStream, endStream;
  const std::function<void()> &work;
  cudaStream_t s0 = nullptr, s1 = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};
} // namespace

std::vector<double>
calibration::timeSamplesUs(overlap_context *ctx, int startStream, int endStream,
                           int warmup, int iters,
                           const std::function<void()> &enqueue) {
  const bool ranks = overlap_context_size(ctx) > 1;
  GateWords *gate = theGate().host;
  const int32_t gaveUpBefore = gate ? gate->gaveUp : 0;
  CudaRepetition steps(ctx, startStream, endStream, enqueue);
  // Repetitions.h: the first (untimed, ungated) loads every kernel; the
  // barrier sits behind the gate, the start event behind the barrier.
  runRepetitions(steps, ranks, warmup, iters);
  gate = theGate().host;
  if (gate && gate->gaveUp != gaveUpBefore)
    printDiagnostic("warning",
                    "rank %d: the timing gate gave up %d time(s) after "
                    "%.0f ms: the enqueue waited for the device, so those "
                    "repetitions include host time\n",
                    overlap_context_rank(ctx), int(gate->gaveUp - gaveUpBefore),
                    kGateBoundNs / 1e6);
  return std::move(steps.times);
}

double calibration::timeUs(overlap_context *ctx, int startStream, int endStream,
                           int warmup, int iters,
                           const std::function<void()> &enqueue) {
  RankReport mine;
  mine.values =
      timeSamplesUs(ctx, startStream, endStream, warmup, iters, enqueue);
  if (overlap_context_size(ctx) == 1)
    return median(mine.values);
  return median(maxOverRanks(exchangeReports(ctx, mine)));
}

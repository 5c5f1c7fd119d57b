//===- Timing.cpp - Device-event timing of enqueued work -------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/Timing.h"

#include "overlap/Calibration/MeasuringContext.h"

#include "CudaCheck.h"

using namespace overlap;
using namespace overlap::calibration;

std::vector<double>
calibration::timeSamplesUs(overlap_context *ctx, int startStream, int endStream,
                           int warmup, int iters,
                           const std::function<void()> &enqueue) {
  auto s0 = static_cast<cudaStream_t>(overlap_cuda_stream(ctx, startStream));
  auto s1 = static_cast<cudaStream_t>(overlap_cuda_stream(ctx, endStream));
  const bool ranks = overlap_context_size(ctx) > 1;
  cudaEvent_t start, stop;
  checkCuda(cudaEventCreate(&start), "cudaEventCreate");
  checkCuda(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times;
  for (int i = 0; i < warmup + iters; ++i) {
    // Both streams idle, so the start event marks the start of the work.
    check(ctx, overlap_context_synchronize(ctx), "synchronize");
    if (ranks)
      check(ctx, overlap_barrier(ctx, startStream, -1, nullptr),
            "overlap_barrier");
    checkCuda(cudaEventRecord(start, s0), "cudaEventRecord");
    if (startStream != endStream)
      checkCuda(cudaStreamWaitEvent(s1, start, 0), "cudaStreamWaitEvent");
    enqueue();
    checkCuda(cudaEventRecord(stop, s1), "cudaEventRecord");
    check(ctx, overlap_context_synchronize(ctx), "synchronize");
    float ms = 0;
    checkCuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (i >= warmup)
      times.push_back(double(ms) * 1000.0);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return times;
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

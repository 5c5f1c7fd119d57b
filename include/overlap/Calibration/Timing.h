//===- Timing.h - Device-event timing of enqueued work ---------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// CUDA part (OverlapCalibrationCuda). Warm-up runs, then the median of
// timed repetitions measured with CUDA events on the context's streams;
// over several ranks every repetition starts after a barrier that runs
// once every rank has enqueued its window, and counts as long as its
// slowest rank took. The order of each repetition: Repetitions.h.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_TIMING_H
#define OVERLAP_CALIBRATION_TIMING_H

#include "overlap/Runtime/overlap_runtime.h"

#include <functional>
#include <vector>

namespace overlap {
namespace calibration {

/// Times `enqueue` (which enqueues work on the context's streams) with
/// device events: recorded on `startStream` before and on `endStream` after
/// (the end stream must depend on all the work, e.g. through waits). Runs
/// `warmup` untimed repetitions (at least one, which loads the kernels,
/// ungated), then returns the `iters` timed ones, in us. Over several ranks
/// a barrier behind the gate on the start stream precedes the start event,
/// so that every rank's repetition starts together once all have enqueued.
std::vector<double> timeSamplesUs(overlap_context *ctx, int startStream,
                                  int endStream, int warmup, int iters,
                                  const std::function<void()> &enqueue);

/// The median of timeSamplesUs. Over several ranks, every rank must call it
/// at the same point, and each repetition counts as long as its slowest
/// rank took (the ranks' times are exchanged).
double timeUs(overlap_context *ctx, int startStream, int endStream, int warmup,
              int iters, const std::function<void()> &enqueue);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_TIMING_H

//===- BenchMeasure.h - One shape of overlap-bench on the GPU --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// CUDA part (OverlapCalibrationCuda). Measures one shape of a sweep
// (BenchSweep.h): for every input set, this rank's inputs from the set's
// seeds, the serial and the overlapped run checked (BenchRunner.h's
// checkRun, or checkRankMajorRun for a rank-major plan; every rank's
// verdict exchanged), then the GEMM alone, the collective alone, the serial
// and the overlapped variant (interleaved or rank-major) timed; with
// --tile-gemm, one interleaved tile's GEMM batched and contiguous. Over several
// ranks every rank must call it with the same arguments.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_BENCHMEASURE_H
#define OVERLAP_CALIBRATION_BENCHMEASURE_H

#include "overlap/Calibration/BenchSweep.h"
#include "overlap/Runtime/overlap_runtime.h"

namespace overlap {
namespace calibration {

/// Measures shape `s` of collective `coll` with `plan`. `keyBase` is
/// advanced past the signal-set keys it takes.
ShapeResult measureShape(overlap_context *ctx, const SweepOptions &options,
                         planner::Collective coll, const GemmShape &s,
                         const ShapePlan &plan, int64_t &keyBase);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_BENCHMEASURE_H

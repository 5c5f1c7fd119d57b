//===- RankMajorSum.h - The rank-major reduce-scatter's sum ----*- C++ -*-===//
//
// Part of the Overlap project. Private to lib/Calibration/Cuda.
//
//===----------------------------------------------------------------------===//
//
// The last step of a rank-major reduce-scatter (RankMajorBench.h): the G
// partials of this rank's block, which sit in the G slots of the staging
// buffer, summed into its result on the compute stream. The same arithmetic
// as the compiled program's linalg.generic (DecomposeRankMajor.cpp's
// sumInOrder) and as calibration::rankOrderSum, which checks it bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_CALIBRATION_CUDA_RANKMAJORSUM_H
#define OVERLAP_LIB_CALIBRATION_CUDA_RANKMAJORSUM_H

#include "overlap/Runtime/overlap_runtime.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace overlap {
namespace calibration {

/// Launches, on `stream`: for each e < slotElements, out[e] = the sum of
/// staging[slot(q) x slotElements + e] for q = 0, 1, ..., group-1 in that
/// order, in f32 from +0.0, rounded once to nearest even to `dtype` (f16,
/// bf16 or f32), where slot(q) = (me - q) mod group holds rank q's partial.
/// Returns the launch's error (cudaErrorInvalidValue for another dtype).
cudaError_t launchRankOrderSum(overlap_dtype dtype, const void *staging,
                               size_t slotElements, int group, int me,
                               void *out, cudaStream_t stream);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_LIB_CALIBRATION_CUDA_RANKMAJORSUM_H

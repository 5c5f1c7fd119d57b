//===- PackMeasure.h - The pack kernel's bandwidth on the GPU --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// CUDA part (OverlapCalibrationCuda). One block of `overlap-bench --pack`
// (PackBlocks.h): overlap_pack and overlap_unpack checked on random bytes
// against the host reference (their outputs start as the complement of
// what they must become, so no byte left unwritten passes), then timed
// against cudaMemcpy2DAsync of the same block (checked too) and a
// contiguous device-to-device copy of the same bytes, all on the compute
// stream.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_PACKMEASURE_H
#define OVERLAP_CALIBRATION_PACKMEASURE_H

#include "overlap/Calibration/PackBlocks.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <string>

namespace overlap {
namespace calibration {

/// Medians in us, and "ok" or what failed ("FAIL pack", ...).
struct PackTimes {
  double packUs = 0, unpackUs = 0, copy2dUs = 0, d2dUs = 0;
  std::string check;
};

/// Checks (random bytes from `seed`) and times one block.
PackTimes measurePackBlock(overlap_context *ctx, const PackBlock &block,
                           uint64_t seed, int warmup, int iters);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_PACKMEASURE_H

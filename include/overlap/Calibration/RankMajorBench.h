//===- RankMajorBench.h - Rank-major tiles in overlap-bench -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Where overlap-bench puts a rank-major plan's chunks (planner::
// RankMajorLayout; DecomposeRankMajor.cpp is the compiled form it times) and
// what its reduce-scatter's final sum must deliver:
//   reduce-scatter  tile t (step s, chunk c) writes its partial (C's rows
//                   copied, then C += A.B) into a buffer of its own, which
//                   overlap_shift sends by +s into slot s of a G-slot
//                   staging buffer (G x M/G x N, the chunk at row
//                   chunkOffset of the slot); step 0 computes straight into
//                   slot 0. The partials of a tile sit in their own buffer
//                   at the same rows as in the staging buffer
//                   (rankMajorStagingRow). The result: the G slots summed
//                   in the ranks' order (rankOrderSum).
//   all-gather      tile t receives block (r + s) mod G's chunk into the
//                   gathered buffer (M x K, row order) at the rows it has
//                   in the full product (RankMajorLayout::globalRow), then
//                   computes C's same rows from it; step 0 reads the local
//                   A.
// Pure C++ (OverlapCalibration); BenchRunner.cpp enqueues, RunChecks.cpp
// checks.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_RANKMAJORBENCH_H
#define OVERLAP_CALIBRATION_RANKMAJORBENCH_H

#include "overlap/Planner/RankMajor.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace overlap {
namespace calibration {

/// The staging slot that holds rank q's partial of rank `me`'s block: rank
/// q computed it on its step (me - q) mod G, and it arrived on this rank's
/// same step (slot 0: this rank's own).
int64_t rankMajorSlotOf(int64_t group, int64_t me, int64_t q);

/// The row of the G x (M/G) staging buffer where tile t's chunk lands:
/// step x M/G + chunkOffset.
int64_t rankMajorStagingRow(const planner::RankMajorLayout &layout, size_t t);

/// The rank-major reduce-scatter's result on rank `me`: each of the
/// `slotElements` elements (M/G x N) is the G partials of `staging` (G slots
/// of `slotElements` elements of `dtype`) added in the order of the ranks
/// that computed them, q = 0, 1, ..., G-1 (slot rankMajorSlotOf(q)), in f32
/// from +0.0, and rounded once (to nearest even) to `dtype`: the arithmetic
/// of DecomposeRankMajor.cpp's sumInOrder (a linalg.generic) and of the
/// bench's kernel, so a run's result must equal it bit for bit.
std::vector<char> rankOrderSum(overlap_dtype dtype, const char *staging,
                               int64_t group, int64_t me, size_t slotElements);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_RANKMAJORBENCH_H

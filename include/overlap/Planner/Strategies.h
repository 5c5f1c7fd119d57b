//===- Strategies.h - The tile strategies on a bound model ------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Each strategy turns a cost model bound to one problem into a priced plan
// (Plan.h). TilePlanner.h dispatches to them by name; they know nothing of
// the dispatcher or of each other.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_STRATEGIES_H
#define OVERLAP_PLANNER_STRATEGIES_H

#include "overlap/Planner/Plan.h"

namespace overlap {
namespace planner {

/// The MC² seed's algorithm on a bound cost model (Mc2.cpp); fails when its
/// blocks would be more than kMaxTiles tiles.
llvm::Expected<Plan> planMc2(const CostModel &model);

/// The exact optimum over partitions whose tiles are multiples of the
/// alignment, except that the first or the last tile also takes
/// M mod alignment (Optimal.cpp); fails past the work bound
/// (kMaxSearchSteps DP states).
llvm::Expected<Plan> planOptimal(const CostModel &model);

/// FlashOverlap wave grouping; fails for all-gather and all-to-all
/// dispatch (the collective feeds the GEMM), for profiles without
/// device.sm_count / device.gemm_tile, and past the work bound (Waves.cpp).
llvm::Expected<Plan> planWaves(const CostModel &model);

/// FiCCO's heuristic; fails for profiles without the dtype's peak FLOP/s
/// and for more than kMaxTiles steps (ranks) (Ficco.cpp).
llvm::Expected<Plan> planFicco(const CostModel &model);

/// Rank-major tiles (RankMajor.h) for reduce-scatter and all-gather on
/// G >= 2 ranks: the least predicted of near-equal cuts of a block into k
/// chunks of the profile's alignment (k = 1, 2, ...; the whole block M/G
/// is always a cut), and of cuts whose first and/or last chunk is one
/// alignment unit (RankMajorStrategy.cpp). Fails (std::errc::
/// invalid_argument) for all-reduce, all-to-all, one rank, experts or row
/// groups, and (std::errc::not_supported) for a reduce-scatter on a profile
/// without device.memory_bandwidth_gbps (its final sum cannot be priced).
llvm::Expected<Plan> planRankMajor(const CostModel &model);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_STRATEGIES_H

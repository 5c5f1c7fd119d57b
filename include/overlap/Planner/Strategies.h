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

/// FlashOverlap wave grouping; fails for all-gather, for profiles without
/// device.sm_count / device.gemm_tile, and past the work bound (Waves.cpp).
llvm::Expected<Plan> planWaves(const CostModel &model);

/// FiCCO's heuristic; fails for profiles without the dtype's peak FLOP/s
/// and for more than kMaxTiles steps (ranks) (Ficco.cpp).
llvm::Expected<Plan> planFicco(const CostModel &model);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_STRATEGIES_H

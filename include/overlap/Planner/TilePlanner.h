//===- TilePlanner.h - Choose M-tiles for matmul + collective --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Strategies that split a fused matmul + collective along M:
//   none         one tile (the serial baseline)
//   uniform:n    n equal aligned tiles
//   mc2          the MC² seed's short-block / long-block algorithm
//   optimal      exact minimum of the simulated makespan over aligned
//                partitions (Pareto DP over tile boundaries)
//   waves        FlashOverlap: one GEMM kernel, its waves grouped, one
//                collective per group
//   ficco        FiCCO's schedule heuristic
//   rank-major   reduce-scatter / all-gather as G blocks cut into chunks,
//                one contiguous GEMM and one shift per chunk (RankMajor.h)
//   auto         the best predicted of all of the above
// Every plan is priced by the same cost model and simulator.
//
// This header is the dispatcher: by name, from a profile and a problem. The
// plan and its pricing are Plan.h, the strategies on a bound cost model
// Strategies.h (both included here for callers that plan in pieces).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_TILEPLANNER_H
#define OVERLAP_PLANNER_TILEPLANNER_H

#include "overlap/Planner/Defaults.h"
#include "overlap/Planner/Plan.h"
#include "overlap/Planner/Strategies.h"

#include "llvm/Support/Error.h"

namespace overlap {
namespace planner {

/// Plans with one of the strategies above. Errors whose code is
/// std::errc::invalid_argument are caused by the strategy string or the
/// problem (bad values); others by what the profile lacks.
llvm::Expected<Plan> planTiles(const Profile &profile,
                               const MatmulProblem &problem,
                               llvm::StringRef strategy);

/// Prices given tiles (each tile's GEMM as the decomposition runs it, see
/// CostModel::gemmUs) with the same model, e.g. for plans chosen elsewhere. The
/// tiles must be positive and sum to M.
llvm::Expected<Plan> evaluateTiles(const Profile &profile,
                                   const MatmulProblem &problem,
                                   llvm::ArrayRef<int64_t> tiles,
                                   llvm::StringRef strategyName = "given");

/// Prices the rank-major plan of `chunks`, the cut of one block of M/G rows
/// (RankMajor.h; priceRankMajor on the problem's model): for plans chosen
/// elsewhere. Fails as RankMajorLayout::create does, and for a
/// reduce-scatter on a profile without device.memory_bandwidth_gbps.
llvm::Expected<Plan> evaluateRankMajor(const Profile &profile,
                                       const MatmulProblem &problem,
                                       llvm::ArrayRef<int64_t> chunks,
                                       llvm::StringRef strategyName =
                                           "rank-major");
/// The same with the exchange groups `groups` (Plan::groups: units per
/// group in execution order, summing to G x chunks.size(); empty: one unit
/// per group). Fails (std::errc::invalid_argument) as finishPlan says.
llvm::Expected<Plan> evaluateRankMajor(const Profile &profile,
                                       const MatmulProblem &problem,
                                       llvm::ArrayRef<int64_t> chunks,
                                       llvm::ArrayRef<int64_t> groups,
                                       llvm::StringRef strategyName =
                                           "rank-major");

/// OVERLAP_STRATEGY_LIST's names (Defaults.h), in order.
llvm::ArrayRef<llvm::StringRef> strategyNames();

/// Whether planTiles takes `strategy` (one of strategyNames(), uniform:n
/// with 1 <= n <= kMaxTiles), without a problem: what the tools and the
/// passes check before planning anything, so that a misspelt strategy is an
/// error even where nothing is planned. The message (std::errc::
/// invalid_argument) lists the strategies.
llvm::Error checkStrategy(llvm::StringRef strategy);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_TILEPLANNER_H

//===- Plan.h - A tile plan and how it is priced ----------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The building blocks every tile strategy uses: the plan (tiles, per-tile
// durations, the simulated timeline, each strategy's details), its pricing
// by the cost model and the simulator (finishPlan), and near-equal tiles on
// an alignment grid (uniformTiles). The strategies (Strategies.h) and the
// dispatcher (TilePlanner.h) sit above this header; nothing here knows them.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_PLAN_H
#define OVERLAP_PLANNER_PLAN_H

#include "overlap/Planner/CostModel.h"
#include "overlap/Planner/Limits.h"
#include "overlap/Planner/Simulator.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace overlap {
namespace planner {

/// How the MC² algorithm reached its tiles (seed 000 notation).
struct Mc2Details {
  int64_t a = 0, b = 0, c = 0;
  /// max(a, b, c), before the final adjustment.
  int64_t shortRowsInitial = 0;
  /// Contended time of the short block on the bound stream (t1 or t0).
  double balanceUs = 0;
  /// Long block rows from inverting the other curve, aligned down.
  int64_t longRowsInitial = 0;
  int64_t count = 0;
  int64_t longRows = 0;
  int64_t shortRows = 0;
  bool shortFirst = true;
};

/// The FlashOverlap wave search.
struct WaveDetails {
  int64_t outputTiles = 0;
  int64_t tilesPerWave = 0;
  int64_t waves = 0;
  double waveUs = 0;
  /// Waves per group of the chosen partition.
  std::vector<int64_t> groups;
  uint64_t candidatesEvaluated = 0;
  bool exhaustive = true;
};

/// The FiCCO heuristic's decision.
struct FiccoDetails {
  std::string schedule; ///< e.g. "uniform-fused-1D"
  std::string reason;
  double opToByte = 0;
  double memoryTrafficBytes = 0;
  double score = 0;
};

/// One strategy tried by `auto`.
struct Candidate {
  std::string strategy;
  bool ok = false;
  double predictedUs = 0;
  size_t numTiles = 0;
  std::string note; ///< why it was skipped, when !ok
};

/// How a plan's tiles address the rows (docs/planner.md, "Rank-major
/// tiles"). Interleaved: TileLayout.h (tile i takes tiles[i]/G rows of every
/// block; the only layout of all-reduce and all-to-all). RankMajor:
/// RankMajor.h (reduce-scatter and all-gather only; a tile is one chunk of
/// one block, one contiguous GEMM and one point-to-point shift).
enum class TileOrder { Interleaved, RankMajor };
/// "interleaved" or "rank-major" (the JSON's "layout").
llvm::StringRef toString(TileOrder order);
std::optional<TileOrder> parseTileOrder(llvm::StringRef name);

struct Plan {
  std::string strategy;
  /// Interleaved unless the strategy is rank-major.
  TileOrder layout = TileOrder::Interleaved;
  /// RankMajor: the k chunk rows of one block (summing to M/G; the same cut
  /// for every block); `tiles` then lists the G x k chunks ("units") in
  /// execution order (RankMajorLayout::tileRows). Empty for Interleaved.
  std::vector<int64_t> chunks;
  /// RankMajor: the exchange groups, the number of units of each in
  /// execution order, summing to G x k. A group's GEMMs (one contiguous GEMM
  /// per unit) run before its ONE exchange: the shifts of all its exchanged
  /// units fused into one call (one NCCL group of sends and receives, one
  /// launch, one per-call latency). The priced per-task vectors (computeUs,
  /// commUs, timeline) then have one entry per group, while `tiles` keeps
  /// listing the units. Empty means one unit per group (priced exactly as
  /// such); finishPlan leaves it as given. Empty for Interleaved.
  std::vector<int64_t> groups;
  /// RankMajor reduce-scatter: the final sum of the G partials of every
  /// chunk, exposed on the compute stream after the last task
  /// (CostModel::rankMajorSumUs); included in predictedUs and
  /// lowerBoundUs. 0 otherwise.
  double tailUs = 0;
  /// "auto" when `auto` chose this plan among `candidates`; else empty.
  std::string selectedBy;
  /// What the Planner changed from what was asked, and why (an explicit
  /// uniform:n on too few preferred row blocks is honoured with smaller
  /// ones); empty when nothing was.
  std::string note;
  std::vector<int64_t> tiles;
  Bound bound = Bound::Comm;
  double predictedUs = 0;
  double serialUs = 0;
  double idealUs = 0;
  /// (serial - predicted) / (serial - ideal); 0 when serial == ideal.
  double efficiency = 0;
  /// max(sum of compute work, sum of comm work) of this plan's tasks.
  double lowerBoundUs = 0;

  /// GEMM calls per tile (FiCCO's unfused schedules issue several).
  int64_t gemmCallsPerTile = 1;
  /// True for `waves`: one GEMM kernel whose wave groups are the tiles.
  bool singleGemmKernel = false;

  /// Uncontended task durations per tile (per exchange group of a
  /// rank-major plan), and the simulated timeline.
  std::vector<double> computeUs;
  std::vector<double> commUs;
  SimResult timeline;

  std::optional<Mc2Details> mc2;
  std::optional<WaveDetails> waves;
  std::optional<FiccoDetails> ficco;
  /// Filled by `auto`.
  std::vector<Candidate> candidates;
};

/// Fills durations, the timeline and the summary numbers of a plan whose
/// tiles are set (and, for single-kernel plans, computeUs too). Every
/// strategy's plan goes through it, so it is where plans are refused: more
/// than kMaxTiles tiles (std::errc::invalid_argument), or a predicted time
/// that is not finite or past kMaxPlanUs (std::errc::result_out_of_range:
/// the profile's curves were taken far outside what they describe).
/// A RankMajor plan (layout and chunks set, tiles either empty or equal to
/// RankMajorLayout::tileRows) is priced by the rank-major model, per
/// exchange group (Plan::groups; empty: one unit per group): its compute is
/// the sum of contiguousGemmUs(c) over its units, its comm one
/// shiftUs(sum of the rows of its exchanged units) (0 when all its units
/// are on step 0), plus tailUs for reduce-scatter; it fails
/// (std::errc::invalid_argument) when the groups are not positive, do not
/// sum to the units or are more than kMaxTiles, and
/// (std::errc::not_supported) when the profile cannot price the tail.
llvm::Error finishPlan(const CostModel &model, Plan &plan);

/// The rank-major plan of `chunks` (the cut of one block) with the exchange
/// groups `groups` (units per group in execution order; empty: one unit
/// per group), priced.
llvm::Expected<Plan> priceRankMajor(const CostModel &model,
                                    llvm::ArrayRef<int64_t> chunks,
                                    llvm::ArrayRef<int64_t> groups,
                                    llvm::StringRef strategyName);
/// The same with one unit per group.
llvm::Expected<Plan> priceRankMajor(const CostModel &model,
                                    llvm::ArrayRef<int64_t> chunks,
                                    llvm::StringRef strategyName);

/// The units of each priced task of a plan (one entry per computeUs entry):
/// Plan::groups for a grouped rank-major plan, else one per tile.
std::vector<int64_t> taskUnits(const Plan &plan);
/// The rows of each priced task: the rows of its units (Plan::tiles)
/// summed.
std::vector<int64_t> taskRows(const Plan &plan);

/// The plan of `tiles` as they are (one GEMM call per tile), priced: at
/// most kMaxTiles tiles, positive and summing to the problem's M (an error
/// with std::errc::invalid_argument otherwise).
llvm::Expected<Plan> pricePlan(const CostModel &model,
                               llvm::ArrayRef<int64_t> tiles,
                               llvm::StringRef strategyName);

/// `n` near-equal tiles on the alignment grid summing to `m` (the last tile
/// also takes m mod alignment). Fails when m has fewer than n blocks or n
/// is past kMaxTiles.
llvm::Expected<std::vector<int64_t>> uniformTiles(int64_t m, int64_t n,
                                                  int64_t alignment);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_PLAN_H

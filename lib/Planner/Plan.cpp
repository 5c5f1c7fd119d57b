//===- Plan.cpp - Pricing a plan, uniform tiles ----------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Plan.h"

#include "overlap/Planner/RankMajor.h"
#include "overlap/Support/EnumNames.h"

#include <algorithm>
#include <cassert>
#include <cmath>

using namespace llvm;
using namespace overlap::planner;
using overlap::EnumName;

static const EnumName<TileOrder> tileOrderNames[] = {
    {TileOrder::Interleaved, "interleaved"},
    {TileOrder::RankMajor, "rank-major"}};

StringRef overlap::planner::toString(TileOrder order) {
  return nameOf(tileOrderNames, order);
}

std::optional<TileOrder> overlap::planner::parseTileOrder(StringRef name) {
  return valueOf(tileOrderNames, name);
}

static Error badValue(const Twine &msg) {
  return createStringError(std::errc::invalid_argument, "%s",
                           msg.str().c_str());
}

static Error badPlanNumber(const Plan &plan, StringRef field, double value) {
  return createStringError(
      std::errc::result_out_of_range,
      "%s: %s is %g us, not a time within %g us: the profile's curves are "
      "taken far outside what they describe (check its latencies, rates "
      "and coefficients)",
      plan.strategy.c_str(), field.str().c_str(), value, kMaxPlanUs);
}

static bool isPlanTime(double v) {
  return std::isfinite(v) && v >= 0 && v <= kMaxPlanUs;
}

/// A rank-major plan's exchange groups: empty, or at most kMaxTiles
/// positive unit counts summing to the plan's `units`.
static Error checkGroups(StringRef strategy, ArrayRef<int64_t> groups,
                         int64_t units) {
  if (groups.empty())
    return Error::success();
  if (static_cast<int64_t>(groups.size()) > kMaxTiles)
    return badValue(strategy + ": " + Twine(groups.size()) +
                    " exchange groups are more than " + Twine(kMaxTiles));
  int64_t sum = 0;
  for (int64_t g : groups) {
    if (g <= 0)
      return badValue(strategy + ": an exchange group of " + Twine(g) +
                      " units (groups are positive)");
    // Checked before adding, so that the sum never passes the units.
    if (g > units - sum)
      return badValue(strategy + ": exchange groups sum to more than the " +
                      Twine(units) + " units (G x chunks)");
    sum += g;
  }
  if (sum != units)
    return badValue(strategy + ": exchange groups sum to " + Twine(sum) +
                    ", not the " + Twine(units) + " units (G x chunks)");
  return Error::success();
}

/// Every tile's compute and comm time must be a number within kMaxPlanUs:
/// the simulator advances time by them, and a nan or inf one never ends.
static Error checkTileNumbers(const Plan &plan) {
  for (size_t i = 0; i < plan.computeUs.size(); ++i) {
    if (!isPlanTime(plan.computeUs[i]))
      return badPlanNumber(plan, "compute_us of tile " + std::to_string(i),
                           plan.computeUs[i]);
    if (!isPlanTime(plan.commUs[i]))
      return badPlanNumber(plan, "comm_us of tile " + std::to_string(i),
                           plan.commUs[i]);
  }
  return Error::success();
}

/// Every time a plan predicts must be a number within kMaxPlanUs, so that
/// no inf or nan reaches an attribute or a JSON document.
static Error checkPlanNumbers(const Plan &plan) {
  auto bad = [&](StringRef field, double value) {
    return badPlanNumber(plan, field, value);
  };
  auto ok = [](double v) { return std::isfinite(v) && v <= kMaxPlanUs; };
  for (auto [field, value] :
       {std::pair<StringRef, double>{"predicted_us", plan.predictedUs},
        {"serial_us", plan.serialUs},
        {"ideal_us", plan.idealUs},
        {"lower_bound_us", plan.lowerBoundUs},
        {"tail_us", plan.tailUs}})
    if (!ok(value))
      return bad(field, value);
  if (plan.mc2 && !ok(plan.mc2->balanceUs))
    return bad("mc2 balance_us", plan.mc2->balanceUs);
  if (plan.waves && !ok(plan.waves->waveUs))
    return bad("waves wave_us", plan.waves->waveUs);
  // Sizes and profile rates are bounded, so these are finite; checked
  // anyway because they are printed too.
  if (plan.ficco && !(std::isfinite(plan.ficco->score) &&
                      std::isfinite(plan.ficco->opToByte) &&
                      std::isfinite(plan.ficco->memoryTrafficBytes)))
    return bad("ficco score", plan.ficco->score);
  if (!std::isfinite(plan.efficiency))
    return bad("efficiency", plan.efficiency);
  return Error::success();
}

Error overlap::planner::finishPlan(const CostModel &model, Plan &plan) {
  size_t n = plan.tiles.size();
  // (A rank-major plan's tiles come from its chunks, checked by its layout.)
  if (plan.layout != TileOrder::RankMajor)
    if (Error e = checkLimit(plan.strategy + ": tiles",
                             static_cast<int64_t>(n), 1, kMaxTiles,
                             "a tile count"))
      return e;
  plan.tailUs = 0;
  if (plan.layout == TileOrder::RankMajor) {
    // One contiguous GEMM and one shift per chunk (RankMajor.h).
    const MatmulProblem &pb = model.getProblem();
    Expected<RankMajorLayout> layout =
        RankMajorLayout::create(pb.collective, pb.m, pb.ranks, plan.chunks);
    if (!layout)
      return layout.takeError();
    std::vector<int64_t> rows = layout->tileRows();
    if (!plan.tiles.empty() && plan.tiles != rows)
      return badValue(plan.strategy +
                      ": a rank-major plan's tiles must be its chunks in "
                      "execution order");
    plan.tiles = std::move(rows);
    n = plan.tiles.size();
    std::optional<double> tail = model.rankMajorSumUs();
    if (!tail)
      return createStringError(
          std::errc::not_supported,
          "%s: the profile has no device.memory_bandwidth_gbps to price "
          "reduce-scatter's final sum of the %lld partials",
          plan.strategy.c_str(), (long long)pb.ranks);
    plan.tailUs = *tail;
    plan.singleGemmKernel = false;
    plan.gemmCallsPerTile = 1;
    if (Error e =
            checkGroups(plan.strategy, plan.groups, static_cast<int64_t>(n)))
      return e;
    // One task per exchange group: its units' GEMMs, then one fused
    // exchange of all its exchanged units' rows (one call, one latency).
    size_t numGroups = plan.groups.empty() ? n : plan.groups.size();
    plan.computeUs.assign(numGroups, 0.0);
    plan.commUs.assign(numGroups, 0.0);
    size_t unit = 0;
    for (size_t g = 0; g < numGroups; ++g) {
      size_t units = plan.groups.empty() ? 1 : plan.groups[g];
      int64_t shifted = 0;
      for (size_t u = 0; u < units; ++u, ++unit) {
        plan.computeUs[g] += model.contiguousGemmUs(plan.tiles[unit]);
        if (layout->exchanges(unit))
          shifted += plan.tiles[unit];
      }
      plan.commUs[g] = shifted > 0 ? model.shiftUs(shifted) : 0.0;
    }
  } else {
    if (!plan.singleGemmKernel) {
      plan.computeUs.resize(n);
      for (size_t i = 0; i < n; ++i)
        plan.computeUs[i] =
            model.gemmUs(plan.tiles[i], plan.gemmCallsPerTile);
    }
    assert(plan.computeUs.size() == n && "compute durations for every tile");
    plan.commUs.resize(n);
    for (size_t i = 0; i < n; ++i)
      plan.commUs[i] = model.commUs(plan.tiles[i]);
  }

  if (Error e = checkTileNumbers(plan))
    return e;

  PipelineSpec spec;
  spec.computeUs = plan.computeUs;
  spec.commUs = plan.commUs;
  spec.order = model.getOrder();
  spec.computeContention = model.getComputeContention();
  spec.commContention = model.getCommContention();
  plan.timeline = simulate(spec);

  // The rank-major sum comes after the last exchange, on the compute
  // stream, exposed.
  plan.predictedUs = plan.timeline.makespanUs + plan.tailUs;
  plan.serialUs = model.serialUs();
  plan.idealUs = model.idealUs();
  plan.bound = model.getBound();
  plan.lowerBoundUs =
      std::max(plan.timeline.computeWorkUs, plan.timeline.commWorkUs) +
      plan.tailUs;
  double room = plan.serialUs - plan.idealUs;
  plan.efficiency =
      room > 1e-9 ? (plan.serialUs - plan.predictedUs) / room : 0.0;
  return checkPlanNumbers(plan);
}

std::vector<int64_t> overlap::planner::taskUnits(const Plan &plan) {
  if (plan.layout == TileOrder::RankMajor && !plan.groups.empty())
    return plan.groups;
  return std::vector<int64_t>(plan.tiles.size(), 1);
}

std::vector<int64_t> overlap::planner::taskRows(const Plan &plan) {
  std::vector<int64_t> rows;
  size_t unit = 0;
  for (int64_t units : taskUnits(plan)) {
    int64_t sum = 0;
    for (int64_t u = 0; u < units && unit < plan.tiles.size(); ++u)
      sum += plan.tiles[unit++];
    rows.push_back(sum);
  }
  return rows;
}

Expected<Plan> overlap::planner::pricePlan(const CostModel &model,
                                           ArrayRef<int64_t> tiles,
                                           StringRef strategyName) {
  const int64_t m = model.getProblem().m;
  if (Error e = checkLimit("tiles", static_cast<int64_t>(tiles.size()), 1,
                           kMaxTiles, "a tile count"))
    return std::move(e);
  int64_t sum = 0;
  for (int64_t t : tiles) {
    if (t <= 0)
      return badValue("tiles: every tile needs at least one row, got " +
                      Twine(t));
    // Each tile within M keeps the sum (at most kMaxTiles of them) in range.
    if (t > m)
      return badValue("tiles: a tile of " + Twine(t) +
                      " rows is larger than M = " + Twine(m));
    sum += t;
  }
  if (sum != m)
    return badValue("tiles: must sum to M = " + Twine(m) + ", got " +
                    Twine(sum));
  Plan plan;
  plan.strategy = strategyName.str();
  plan.tiles.assign(tiles.begin(), tiles.end());
  if (Error e = finishPlan(model, plan))
    return std::move(e);
  return std::move(plan);
}

Expected<Plan> overlap::planner::priceRankMajor(const CostModel &model,
                                                ArrayRef<int64_t> chunks,
                                                ArrayRef<int64_t> groups,
                                                StringRef strategyName) {
  Plan plan;
  plan.strategy = strategyName.str();
  plan.layout = TileOrder::RankMajor;
  plan.chunks.assign(chunks.begin(), chunks.end());
  plan.groups.assign(groups.begin(), groups.end());
  if (Error e = finishPlan(model, plan))
    return std::move(e);
  return std::move(plan);
}

Expected<Plan> overlap::planner::priceRankMajor(const CostModel &model,
                                                ArrayRef<int64_t> chunks,
                                                StringRef strategyName) {
  return priceRankMajor(model, chunks, ArrayRef<int64_t>(), strategyName);
}

Expected<std::vector<int64_t>>
overlap::planner::uniformTiles(int64_t m, int64_t n, int64_t alignment) {
  if (Error e = checkLimit("--strategy: uniform:n", n, 1, kMaxTiles,
                           "a tile count n"))
    return std::move(e);
  int64_t blocks = m / alignment;
  int64_t rem = m % alignment;
  if (n == 1)
    return std::vector<int64_t>{m};
  if (blocks < n)
    return badValue("--strategy: uniform:" + Twine(n) + " needs " + Twine(n) +
                    " tiles of " + Twine(alignment) + "-row blocks but M = " +
                    Twine(m) + " has only " + Twine(blocks));
  std::vector<int64_t> tiles(n);
  for (int64_t i = 0; i < n; ++i)
    tiles[i] = (blocks / n + (i < blocks % n ? 1 : 0)) * alignment;
  tiles.back() += rem;
  return std::move(tiles);
}

//===- Plan.cpp - Pricing a plan, uniform tiles ----------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Plan.h"

#include <algorithm>
#include <cassert>

using namespace llvm;
using namespace overlap::planner;

static Error badValue(const Twine &msg) {
  return createStringError(std::errc::invalid_argument, "%s",
                           msg.str().c_str());
}

void overlap::planner::finishPlan(const CostModel &model, Plan &plan) {
  size_t n = plan.tiles.size();
  if (!plan.singleGemmKernel) {
    plan.computeUs.resize(n);
    for (size_t i = 0; i < n; ++i)
      plan.computeUs[i] = model.gemmUs(plan.tiles[i], plan.gemmCallsPerTile);
  }
  assert(plan.computeUs.size() == n && "compute durations for every tile");
  plan.commUs.resize(n);
  for (size_t i = 0; i < n; ++i)
    plan.commUs[i] = model.commUs(plan.tiles[i]);

  PipelineSpec spec;
  spec.computeUs = plan.computeUs;
  spec.commUs = plan.commUs;
  spec.order = model.getOrder();
  spec.computeContention = model.getComputeContention();
  spec.commContention = model.getCommContention();
  plan.timeline = simulate(spec);

  plan.predictedUs = plan.timeline.makespanUs;
  plan.serialUs = model.serialUs();
  plan.idealUs = model.idealUs();
  plan.bound = model.getBound();
  plan.lowerBoundUs =
      std::max(plan.timeline.computeWorkUs, plan.timeline.commWorkUs);
  double room = plan.serialUs - plan.idealUs;
  plan.efficiency =
      room > 1e-9 ? (plan.serialUs - plan.predictedUs) / room : 0.0;
}

Expected<Plan> overlap::planner::pricePlan(const CostModel &model,
                                           ArrayRef<int64_t> tiles,
                                           StringRef strategyName) {
  const int64_t m = model.getProblem().m;
  int64_t sum = 0;
  for (int64_t t : tiles) {
    if (t <= 0)
      return badValue("tiles: every tile needs at least one row, got " +
                      Twine(t));
    sum += t;
  }
  if (tiles.empty() || sum != m)
    return badValue("tiles: must sum to M = " + Twine(m) + ", got " +
                    Twine(sum));
  Plan plan;
  plan.strategy = strategyName.str();
  plan.tiles.assign(tiles.begin(), tiles.end());
  finishPlan(model, plan);
  return std::move(plan);
}

Expected<std::vector<int64_t>>
overlap::planner::uniformTiles(int64_t m, int64_t n, int64_t alignment) {
  if (n < 1)
    return badValue("--strategy: uniform:n needs n >= 1, got " + Twine(n));
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

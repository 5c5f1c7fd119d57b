//===- TilePlanner.cpp - Strategy dispatch and auto ------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/TilePlanner.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>

using namespace llvm;
using namespace overlap::planner;

static Error badValue(const Twine &msg) {
  return createStringError(std::errc::invalid_argument, "%s",
                           msg.str().c_str());
}

ArrayRef<StringRef> overlap::planner::strategyNames() {
  static const StringRef names[] = {"none",  "uniform:n", "mc2", "optimal",
                                    "waves", "ficco",     "auto"};
  return names;
}

Expected<Plan> overlap::planner::evaluateTiles(const Profile &profile,
                                               const MatmulProblem &problem,
                                               ArrayRef<int64_t> tiles,
                                               StringRef strategyName) {
  Expected<CostModel> model = CostModel::create(profile, problem);
  if (!model)
    return model.takeError();
  return pricePlan(*model, tiles, strategyName);
}

static Expected<Plan> planOne(const CostModel &model, StringRef strategy) {
  if (strategy == "none")
    return pricePlan(model, {model.getProblem().m}, "none");
  if (strategy.consume_front("uniform:")) {
    int64_t n = 0;
    if (strategy.getAsInteger(10, n) || n < 1)
      return badValue("--strategy: uniform:n needs a positive integer n, "
                      "got '" +
                      strategy + "'");
    Expected<std::vector<int64_t>> tiles =
        uniformTiles(model.getProblem().m, n, model.getAlignment());
    if (!tiles)
      return tiles.takeError();
    return pricePlan(model, *tiles, ("uniform:" + Twine(n)).str());
  }
  if (strategy == "mc2")
    return planMc2(model);
  if (strategy == "optimal")
    return planOptimal(model);
  if (strategy == "waves")
    return planWaves(model);
  if (strategy == "ficco")
    return planFicco(model);
  return badValue("--strategy: expected none, uniform:n, mc2, optimal, "
                  "waves, ficco or auto, got '" +
                  strategy + "'");
}

static Expected<Plan> planAuto(const CostModel &model) {
  std::vector<std::string> names = {"none"};
  int64_t blocks = model.getProblem().m / model.getAlignment();
  for (int64_t n = 2; n <= std::min<int64_t>(16, blocks); ++n)
    names.push_back(("uniform:" + Twine(n)).str());
  for (StringRef s : {"mc2", "optimal", "waves", "ficco"})
    names.push_back(s.str());

  std::optional<Plan> best;
  std::vector<Candidate> candidates;
  for (const std::string &name : names) {
    Candidate c;
    c.strategy = name;
    Expected<Plan> plan = planOne(model, name);
    if (!plan) {
      c.note = toString(plan.takeError());
      candidates.push_back(std::move(c));
      continue;
    }
    c.ok = true;
    c.predictedUs = plan->predictedUs;
    c.numTiles = plan->tiles.size();
    candidates.push_back(std::move(c));
    // Ties keep the earlier, simpler strategy.
    if (!best || plan->predictedUs < best->predictedUs * (1 - 1e-12))
      best = std::move(*plan);
  }
  // `none` fails only when the profile cannot price the problem at all
  // (its plan is not a number): every candidate failed, say the first why.
  if (!best)
    return createStringError(std::errc::result_out_of_range,
                             "auto: no strategy gave a plan; %s",
                             candidates.front().note.c_str());
  best->selectedBy = "auto";
  best->candidates = std::move(candidates);
  return std::move(*best);
}

Expected<Plan> overlap::planner::planTiles(const Profile &profile,
                                           const MatmulProblem &problem,
                                           StringRef strategy) {
  Expected<CostModel> model = CostModel::create(profile, problem);
  if (!model)
    return model.takeError();
  if (strategy == "auto")
    return planAuto(*model);
  return planOne(*model, strategy);
}

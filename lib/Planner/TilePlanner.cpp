//===- TilePlanner.cpp - Strategy dispatch and auto ------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/TilePlanner.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <numeric>

using namespace llvm;
using namespace overlap::planner;

static Error badValue(const Twine &msg) {
  return createStringError(std::errc::invalid_argument, "%s",
                           msg.str().c_str());
}

ArrayRef<StringRef> overlap::planner::strategyNames() {
  static const std::vector<StringRef> names = [] {
    SmallVector<StringRef, 8> parts;
    StringRef(OVERLAP_STRATEGY_LIST).split(parts, ", ");
    return std::vector<StringRef>(parts.begin(), parts.end());
  }();
  return names;
}

/// "--strategy: expected none, uniform:n, ... or auto, got 'x'".
static Error unknownStrategy(StringRef strategy) {
  std::string list;
  ArrayRef<StringRef> names = strategyNames();
  for (size_t i = 0; i < names.size(); ++i)
    list += (i == 0                  ? ""
             : i + 1 == names.size() ? " or "
                                     : ", ") +
            names[i].str();
  return badValue("--strategy: expected " + list + ", got '" + strategy + "'");
}

static Error checkUniformCount(StringRef count) {
  int64_t n = 0;
  if (count.getAsInteger(10, n) || n < 1)
    return badValue("--strategy: uniform:n needs a positive integer n, "
                    "got '" +
                    count + "'");
  return checkLimit("--strategy: uniform:n", n, 1, kMaxTiles, "a tile count n");
}

Error overlap::planner::checkStrategy(StringRef strategy) {
  if (strategy.consume_front("uniform:"))
    return checkUniformCount(strategy);
  for (StringRef name : strategyNames())
    if (name != "uniform:n" && name == strategy)
      return Error::success();
  return unknownStrategy(strategy);
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

Expected<Plan> overlap::planner::evaluateRankMajor(const Profile &profile,
                                                   const MatmulProblem &problem,
                                                   ArrayRef<int64_t> chunks,
                                                   StringRef strategyName) {
  Expected<CostModel> model = CostModel::create(profile, problem);
  if (!model)
    return model.takeError();
  return priceRankMajor(*model, chunks, strategyName);
}

Expected<Plan> overlap::planner::evaluateRankMajor(const Profile &profile,
                                                   const MatmulProblem &problem,
                                                   ArrayRef<int64_t> chunks,
                                                   ArrayRef<int64_t> groups,
                                                   StringRef strategyName) {
  Expected<CostModel> model = CostModel::create(profile, problem);
  if (!model)
    return model.takeError();
  return priceRankMajor(*model, chunks, groups, strategyName);
}

static Expected<Plan> planOne(const CostModel &model, StringRef strategy) {
  if (strategy == "none")
    return pricePlan(model, {model.getProblem().m}, "none");
  if (strategy.consume_front("uniform:")) {
    if (Error e = checkUniformCount(strategy))
      return std::move(e);
    int64_t n = 0;
    (void)strategy.getAsInteger(10, n);
    // An explicit tile count is honoured: with row blocks halved from
    // the preferred alignment until M has n of them (or M one-row tiles
    // when M < n), saying so, never a compile error.
    // Blocks stay multiples of what the tile layout needs
    // (getMinAlignment: the group's slots for a gather or scatter).
    const int64_t m = model.getProblem().m;
    const int64_t least = model.getMinAlignment();
    int64_t alignment = model.getAlignment();
    int64_t count = n;
    for (int64_t p = alignment; m / alignment < count && p > 1;) {
      p /= 2;
      alignment = std::lcm(std::max<int64_t>(p, 1), least);
    }
    std::string note;
    if (m / alignment < count) {
      int64_t most = std::max<int64_t>(1, m / alignment);
      note = ("uniform:" + Twine(n) + " asks for " + Twine(n) +
              " tiles but M = " + Twine(m) + " holds only " + Twine(most) +
              " of " + Twine(alignment) + " rows (the least a tile can be " +
              "here): " + Twine(most) + " tile" + (most == 1 ? "" : "s"))
                 .str();
      count = most;
    } else if (alignment != model.getAlignment()) {
      note = ("uniform:" + Twine(n) + " needs " + Twine(n) + " tiles of " +
              Twine(model.getAlignment()) + "-row blocks but M = " + Twine(m) +
              " has " + Twine(m / model.getAlignment()) + ": honoured with " +
              Twine(alignment) + "-row blocks (smaller than the preferred " +
              Twine(model.getAlignment()) + ")")
                 .str();
    }
    Expected<std::vector<int64_t>> tiles = uniformTiles(m, count, alignment);
    if (!tiles)
      return tiles.takeError();
    Expected<Plan> plan =
        pricePlan(model, *tiles, ("uniform:" + Twine(n)).str());
    if (plan)
      plan->note = note;
    return plan;
  }
  if (strategy == "mc2")
    return planMc2(model);
  if (strategy == "optimal")
    return planOptimal(model);
  if (strategy == "waves")
    return planWaves(model);
  if (strategy == "ficco")
    return planFicco(model);
  if (strategy == "rank-major")
    return planRankMajor(model);
  return unknownStrategy(strategy);
}

static Expected<Plan> planAuto(const CostModel &model) {
  std::vector<std::string> names = {"none"};
  int64_t blocks = model.getProblem().m / model.getAlignment();
  for (int64_t n = 2; n <= std::min<int64_t>(16, blocks); ++n)
    names.push_back(("uniform:" + Twine(n)).str());
  // Every other strategy of the list but auto itself.
  for (StringRef s : strategyNames())
    if (s != "none" && s != "auto" && !s.starts_with("uniform:"))
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
  // A split is kept only when it beats serial by more than the profile's
  // prediction error for the collective: a smaller predicted gain may be a
  // loss (docs/planner.md, "Never slower than serial").
  if (best->tiles.size() > 1) {
    const Profile &profile = model.getProfile();
    const Collective coll = model.getProblem().collective;
    const double margin = profile.getPredictionMargin(coll);
    const double serial = model.serialUs();
    const double gain = serial > 0 ? (serial - best->predictedUs) / serial : 0;
    if (!(gain > margin)) {
      Expected<Plan> none = planOne(model, "none");
      if (!none)
        return none.takeError();
      bool measured =
          profile.predictionError[static_cast<int>(coll)].has_value();
      none->note =
          formatv("auto keeps one tile: the best split ({0}, {1} tiles) is "
                  "predicted {2:f1} % faster than serial, inside ",
                  best->strategy, best->tiles.size(), gain * 100)
              .str() +
          (measured
               ? formatv("the profile's {0:f1} % prediction error for {1}",
                         margin * 100, toString(coll))
                     .str()
               : formatv("the default margin of {0:f1} % (the profile has "
                         "no prediction_error for {1})",
                         margin * 100, toString(coll))
                     .str());
      best = std::move(*none);
    }
  }
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

//===- BenchSweep.cpp - What overlap-bench measures per shape --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/BenchSweep.h"

#include "overlap/Calibration/Reports.h"
#include "overlap/Planner/TilePlanner.h"
#include "overlap/Support/EnumNames.h"

#include <algorithm>

using namespace llvm;
using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;
using planner::TileLayout;

std::optional<TileGemmMode>
calibration::parseTileGemmMode(const std::string &text) {
  static const EnumName<TileGemmMode> names[] = {
      {TileGemmMode::Batched, "batched"},
      {TileGemmMode::Contiguous, "contiguous"},
      {TileGemmMode::Both, "both"}};
  return valueOf(names, text);
}

Expected<ShapePlan> calibration::planShape(const SweepOptions &o,
                                           Collective coll,
                                           const GemmShape &s) {
  Expected<TileLayout> whole = TileLayout::create(coll, s.m, o.ranks, {s.m});
  if (!whole)
    return whole.takeError();
  std::string note;
  double predicted = NAN;
  std::optional<TileLayout> plan;
  if (o.profile) {
    planner::MatmulProblem problem{coll,   s.m, s.n, s.k, plannerDtype(o.dtype),
                                   o.ranks};
    problem.side = o.side;
    Expected<planner::Plan> planned =
        planner::planTiles(*o.profile, problem, o.strategy);
    if (!planned) {
      note = toString(planned.takeError());
    } else if (Expected<TileLayout> l =
                   TileLayout::create(coll, s.m, o.ranks, planned->tiles)) {
      plan = std::move(*l);
      predicted = planned->predictedUs;
    } else {
      note =
          "the plan's tiles do not fit the layout: " + toString(l.takeError());
    }
  }
  if (!plan) {
    Expected<std::vector<int64_t>> tiles =
        planner::uniformTiles(coll, s.m, o.ranks, o.uniformTiles);
    if (!tiles)
      return tiles.takeError();
    Expected<TileLayout> l = TileLayout::create(coll, s.m, o.ranks, *tiles);
    if (!l)
      return l.takeError();
    plan = std::move(*l);
  }
  return ShapePlan{std::move(*whole), std::move(*plan), predicted, note};
}

double ShapeResult::eta() const {
  return (serial - overlapped) / (serial - ideal);
}

double ShapeResult::predictionError() const {
  return (predicted - overlapped) / overlapped;
}

SweepSummary calibration::summarize(const std::vector<ShapeResult> &results) {
  SweepSummary sum;
  std::vector<double> etas, errors;
  for (const ShapeResult &r : results) {
    sum.failures += r.failed();
    if (r.serial - r.ideal > 0)
      etas.push_back(r.eta());
    if (!std::isnan(r.predicted))
      errors.push_back(std::abs(r.predictionError()));
  }
  sum.etaShapes = etas.size();
  if (!etas.empty()) {
    sum.etaMedian = median(etas);
    sum.etaBest = *std::max_element(etas.begin(), etas.end());
  }
  if (!errors.empty()) {
    sum.errorMedian = median(errors);
    sum.errorMax = *std::max_element(errors.begin(), errors.end());
  }
  return sum;
}

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
#include <ostream>

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

/// `chunks` uniform chunks of every block of M/G rows, laid out rank-major.
static Expected<planner::RankMajorLayout> uniformRankMajor(Collective coll,
                                                           const GemmShape &s,
                                                           int64_t group,
                                                           int64_t chunks) {
  // The caller's TileLayout took M as a multiple of the group.
  Expected<std::vector<int64_t>> cut =
      planner::uniformTiles(s.m / group, chunks, /*alignment=*/1);
  if (!cut)
    return cut.takeError();
  return planner::RankMajorLayout::create(coll, s.m, group, *cut);
}

Expected<ShapePlan> calibration::planShape(const SweepOptions &o,
                                           Collective coll,
                                           const GemmShape &s) {
  Expected<TileLayout> whole = TileLayout::create(coll, s.m, o.ranks, {s.m});
  if (!whole)
    return whole.takeError();
  const bool forceRankMajor = o.layout == planner::TileOrder::RankMajor;
  if (forceRankMajor && coll != Collective::ReduceScatter &&
      coll != Collective::AllGather)
    return createStringError(std::errc::invalid_argument,
                             "rank-major tiles are for reduce-scatter and "
                             "all-gather only (--layout rank-major)");
  std::string note;
  double predicted = NAN;
  std::optional<TileLayout> plan;
  std::optional<planner::RankMajorLayout> rankMajor;
  if (o.profile) {
    planner::MatmulProblem problem{coll,   s.m, s.n, s.k, plannerDtype(o.dtype),
                                   o.ranks};
    problem.side = o.side;
    Expected<planner::Plan> planned =
        planner::planTiles(*o.profile, problem, o.strategy);
    if (!planned) {
      note = toString(planned.takeError());
    } else if (o.layout && planned->layout != *o.layout) {
      note = "the plan is " + planner::toString(planned->layout).str() +
             ", --layout " + planner::toString(*o.layout).str();
    } else if (planned->layout == planner::TileOrder::RankMajor) {
      if (Expected<planner::RankMajorLayout> l =
              planner::RankMajorLayout::create(coll, s.m, o.ranks,
                                               planned->chunks)) {
        rankMajor = std::move(*l);
        predicted = planned->predictedUs;
      } else {
        note = "the plan's chunks do not fit the layout: " +
               toString(l.takeError());
      }
    } else if (Expected<TileLayout> l =
                   TileLayout::create(coll, s.m, o.ranks, planned->tiles)) {
      plan = std::move(*l);
      predicted = planned->predictedUs;
    } else {
      note =
          "the plan's tiles do not fit the layout: " + toString(l.takeError());
    }
  }
  if (!plan && !rankMajor && forceRankMajor) {
    Expected<planner::RankMajorLayout> l =
        uniformRankMajor(coll, s, o.ranks, o.rankMajorChunks);
    if (!l)
      return l.takeError();
    rankMajor = std::move(*l);
  }
  if (rankMajor) {
    const TileLayout &w = *whole;
    return ShapePlan{w, w, std::move(rankMajor), predicted, note};
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
  return ShapePlan{std::move(*whole), std::move(*plan), std::nullopt, predicted,
                   note};
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

void calibration::writeSweepCsv(std::ostream &csv, const SweepOptions &o,
                                const std::string &runtime,
                                const std::string &knobs,
                                const std::vector<ShapeResult> &rows) {
  csv << "# runtime: " << runtime << "\n";
  csv << "leg,collective,ranks,dtype,M,N,K,size_bytes,wire_bytes,tiles,"
         "layout,gemm_us,comm_us,serial_us,overlapped_us,ideal_us,"
         "predicted_us,speedup,eta,prediction_error,tile_rows,tile_batch,"
         "tile_batched_us,tile_contiguous_us,knobs,check\n";
  for (const ShapeResult &row : rows)
    csv << o.leg << ','
        << (row.coll == Collective::AllToAll
                ? "all-to-all-" + planner::toString(o.side).str()
                : planner::toString(row.coll).str())
        << ',' << o.ranks << ',' << o.dtypeName << ',' << row.s.m << ','
        << row.s.n << ',' << row.s.k << ',' << row.bytes << ',' << row.wire
        << ',' << row.tiles << ',' << planner::toString(row.layout).str() << ','
        << row.gemm << ',' << row.comm << ',' << row.serial << ','
        << row.overlapped << ',' << row.ideal << ',' << row.predicted << ','
        << row.speedup() << ',' << row.eta() << ',' << row.predictionError()
        << ',' << row.tileRows << ',' << row.tileBatch << ','
        << row.tileBatchedUs << ',' << row.tileContiguousUs << ",\"" << knobs
        << "\",\"" << row.check << "\"\n";
}

//===- BenchMeasure.cpp - One shape of overlap-bench on the GPU -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/BenchMeasure.h"

#include "overlap/Calibration/BenchRunner.h"
#include "overlap/Calibration/MeasuringContext.h"
#include "overlap/Calibration/Timing.h"
#include "overlap/Planner/Ring.h"

#include <algorithm>
#include <tuple>

using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;
using planner::TileLayout;

static const int compute = OVERLAP_STREAM_COMPUTE, comm = OVERLAP_STREAM_COMM;

ShapeResult calibration::measureShape(overlap_context *ctx,
                                      const SweepOptions &o, Collective coll,
                                      const GemmShape &s, const ShapePlan &plan,
                                      int64_t &keyBase) {
  BenchRunner r{ctx,       o.dtype,     elementBytes(o.dtype),
                s,         coll,        o.nccl(),
                o.ranks,   o.rank,      plan.whole,
                plan.plan, keyBase += 2};
  r.side = o.side;
  r.smCopyCtas = o.smCopy() ? o.smCopyCtas : 0;
  r.rankMajor = plan.rankMajor;
  ShapeResult row;
  row.coll = coll;
  row.s = s;
  row.bytes = r.commBytes();
  row.wire = size_t(planner::ringWireBytes(coll, o.ranks, int64_t(row.bytes)));
  row.tiles = plan.tiles();
  row.layout = plan.layout();
  row.predicted = plan.predictedUs;
  row.planNote = plan.note;
  r.allocate();

  // A rank-major tile is one contiguous GEMM already: no forms to compare.
  const bool tileForms = coll != Collective::AllReduce &&
                         o.tileGemm != TileGemmMode::None && !plan.rankMajor;
  const bool timeBatched = tileForms && o.tileGemm != TileGemmMode::Contiguous;
  const bool timeContiguous = tileForms && o.tileGemm != TileGemmMode::Batched;
  if (tileForms) {
    row.tileRows = plan.plan[0].rows;
    row.tileBatch = plan.plan.slots();
  }

  std::vector<double> gemmT, commT, serialT, overlapT, batchedT, contiguousT;
  for (int set = 0; set < o.inputSets && !row.failed(); ++set) {
    uint64_t seed = uint64_t(set) * 7919 + uint64_t(s.m * 31 + s.n * 17 + s.k);
    // Every rank's inputs follow from the seed and its rank.
    RankProblem problem{coll, s.m, s.n, s.k, o.ranks, o.dtype, seed};
    problem.side = o.side;
    Inputs in = makeInputs(problem, o.rank);
    r.upload(in);
    // Both variants run whatever the first found, so that every rank
    // issues the same collectives; then every rank learns every rank's
    // verdict and all stop after this set if one failed.
    RankReport verdict;
    for (auto [variant, layout, key] :
         {std::tuple<const char *, const TileLayout *, int64_t>{
              "serial", &r.whole, r.key},
          {"overlapped", &r.plan, r.key + 1}}) {
      const uint64_t checkSeed = mix64(seed + 3) + uint64_t(o.rank);
      std::string bad = r.rankMajor && key != r.key
                            ? checkRankMajorRun(r, key, in, problem, checkSeed)
                            : checkRun(r, *layout, key, in, problem, checkSeed);
      if (!bad.empty() && verdict.message.empty())
        verdict.message = std::string(variant) + ": " + bad;
    }
    std::string failed = describeFailures(exchangeReports(ctx, verdict));
    if (!failed.empty())
      row.check = "FAIL " + failed;
    gemmT.push_back(timeUs(ctx, compute, compute, o.warmup, o.iters,
                           [&] { r.gemm(r.whole, 0, -1); }));
    commT.push_back(timeUs(ctx, comm, comm, o.warmup, o.iters,
                           [&] { r.collective(r.whole, 0, -1); }));
    serialT.push_back(timeUs(ctx, r.producer(), r.consumer(), o.warmup, o.iters,
                             [&] { r.serial(); }));
    overlapT.push_back(timeUs(ctx, r.producer(), r.overlappedEnd(), o.warmup,
                              o.iters, [&] { r.overlapped(); }));
    if (timeBatched)
      batchedT.push_back(timeUs(ctx, compute, compute, o.warmup, o.iters,
                                [&] { r.tileGemm(r.plan, 0, true); }));
    if (timeContiguous)
      contiguousT.push_back(timeUs(ctx, compute, compute, o.warmup, o.iters,
                                   [&] { r.tileGemm(r.plan, 0, false); }));
  }
  row.gemm = median(gemmT);
  row.comm = median(commT);
  row.serial = median(serialT);
  row.overlapped = median(overlapT);
  row.ideal = std::max(row.gemm, row.comm);
  if (timeBatched)
    row.tileBatchedUs = median(batchedT);
  if (timeContiguous)
    row.tileContiguousUs = median(contiguousT);
  r.release();
  return row;
}

//===- BenchSweepTest.cpp - What overlap-bench measures per shape ---------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/BenchSweep.h"

#include "overlap/Planner/TilePlanner.h"

#include "gtest/gtest.h"

#include <numeric>

using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;

namespace {

planner::Profile datasheet() {
  auto p =
      planner::loadProfile(OVERLAP_PROFILES_DIR "/h100-nvlink-datasheet.json");
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return planner::Profile();
  }
  return std::move(*p);
}

TEST(BenchSweep, UniformTilesWithoutAProfile) {
  SweepOptions o;
  o.ranks = 8;
  o.uniformTiles = 3;
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather}) {
    auto plan = planShape(o, c, {4096, 1024, 1024});
    ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
    EXPECT_EQ(plan->whole.size(), 1u);
    EXPECT_TRUE(plan->whole.isWhole(0));
    ASSERT_EQ(plan->plan.size(), 3u);
    EXPECT_TRUE(std::isnan(plan->predictedUs));
    EXPECT_TRUE(plan->note.empty());
    // The Planner's per-collective uniform tiles, laid out.
    auto tiles = planner::uniformTiles(c, 4096, 8, 3);
    ASSERT_TRUE(bool(tiles));
    for (size_t t = 0; t < 3; ++t)
      EXPECT_EQ(plan->plan[t].rows, (*tiles)[t]);
    EXPECT_EQ(plan->plan.slots(), c == Collective::AllReduce ? 1 : 8);
  }
}

// All-to-all plans for the side it runs: dispatch like all-gather
// (comm first), combine like reduce-scatter, with the Planner's times.
TEST(BenchSweep, AllToAllPlansItsSide) {
  SweepOptions o;
  o.ranks = 8;
  o.profile = datasheet();
  o.strategy = "optimal";
  for (auto side : {planner::AllToAllSide::Dispatch,
                    planner::AllToAllSide::Combine}) {
    o.side = side;
    auto plan = planShape(o, Collective::AllToAll, {4096, 8192, 3072});
    ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
    planner::MatmulProblem pb{Collective::AllToAll, 4096, 8192, 3072,
                              planner::DType::F16, 8};
    pb.side = side;
    auto want = planner::planTiles(*o.profile, pb, "optimal");
    ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
    EXPECT_DOUBLE_EQ(plan->predictedUs, want->predictedUs);
    ASSERT_EQ(plan->plan.size(), want->tiles.size());
    EXPECT_EQ(plan->plan.slots(), 8);
  }
}

TEST(BenchSweep, ThePlannersPlanAndPrediction) {
  SweepOptions o;
  o.ranks = 8;
  o.profile = datasheet();
  o.strategy = "uniform:4";
  auto plan = planShape(o, Collective::ReduceScatter, {4096, 8192, 3072});
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  ASSERT_EQ(plan->plan.size(), 4u);
  auto want = planner::planTiles(
      *o.profile,
      {Collective::ReduceScatter, 4096, 8192, 3072, planner::DType::F16, 8},
      "uniform:4");
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  EXPECT_DOUBLE_EQ(plan->predictedUs, want->predictedUs);
  for (size_t t = 0; t < 4; ++t)
    EXPECT_EQ(plan->plan[t].rows, want->tiles[t]);

  // A strategy the Planner refuses (more tiles than it plans at all; a
  // uniform:64 on 8 row blocks is honoured with smaller blocks now):
  // uniform tiles, and the reason.
  o.strategy = "uniform:5000";
  plan = planShape(o, Collective::AllReduce, {1024, 8192, 3072});
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_NE(plan->note.find("got 5000"), std::string::npos) << plan->note;
  EXPECT_EQ(plan->plan.size(), 4u);
  EXPECT_TRUE(std::isnan(plan->predictedUs));
}

TEST(BenchSweep, ShapesWithoutALayoutAreSkipped) {
  SweepOptions o;
  o.ranks = 3;
  auto plan = planShape(o, Collective::AllGather, {1024, 64, 64});
  ASSERT_FALSE(bool(plan));
  std::string why = llvm::toString(plan.takeError());
  EXPECT_NE(why.find("M (1024) is not a multiple of the group (3)"),
            std::string::npos)
      << why;
  // All-reduce has no blocks.
  EXPECT_TRUE(bool(planShape(o, Collective::AllReduce, {1024, 64, 64})));
}

TEST(BenchSweep, TileGemmModes) {
  EXPECT_EQ(parseTileGemmMode("batched"), TileGemmMode::Batched);
  EXPECT_EQ(parseTileGemmMode("contiguous"), TileGemmMode::Contiguous);
  EXPECT_EQ(parseTileGemmMode("both"), TileGemmMode::Both);
  EXPECT_FALSE(parseTileGemmMode("none"));
  EXPECT_FALSE(parseTileGemmMode(""));
}

TEST(BenchSweep, ResultsAndSummary) {
  ShapeResult a;
  a.serial = 100;
  a.overlapped = 70;
  a.ideal = 60;
  a.predicted = 77;
  EXPECT_DOUBLE_EQ(a.speedup(), 100.0 / 70.0);
  EXPECT_DOUBLE_EQ(a.eta(), 0.75);
  EXPECT_DOUBLE_EQ(a.predictionError(), 0.1);
  ShapeResult b = a;
  b.overlapped = 90;
  b.predicted = NAN; // no prediction
  b.check = "FAIL overlapped: tile 1";
  ShapeResult c = a;
  c.ideal = 100; // no room to overlap: no eta
  c.predicted = 56;
  SweepSummary s = summarize({a, b, c});
  EXPECT_EQ(s.etaShapes, 2u);
  EXPECT_DOUBLE_EQ(s.etaMedian, 0.5 * (0.75 + 0.25));
  EXPECT_DOUBLE_EQ(s.etaBest, 0.75);
  EXPECT_DOUBLE_EQ(s.errorMedian, 0.15);
  EXPECT_DOUBLE_EQ(s.errorMax, 0.2);
  EXPECT_EQ(s.failures, 1);
  SweepSummary empty = summarize({});
  EXPECT_TRUE(std::isnan(empty.etaMedian));
  EXPECT_EQ(empty.failures, 0);
}

} // namespace

//===- BenchSweepTest.cpp - What overlap-bench measures per shape ---------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/BenchSweep.h"

#include "overlap/Planner/TilePlanner.h"

#include "gtest/gtest.h"

#include <numeric>
#include <sstream>

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

// --layout rank-major without a profile: --chunks uniform chunks of every
// block, G x chunks tiles in the Planner's order; other collectives'
// shapes are refused (skipped), as is one rank.
TEST(BenchSweep, RankMajorWithoutAProfile) {
  SweepOptions o;
  o.ranks = 4;
  o.layout = planner::TileOrder::RankMajor;
  o.rankMajorChunks = 3;
  for (Collective c : {Collective::ReduceScatter, Collective::AllGather}) {
    auto plan = planShape(o, c, {1024, 256, 256});
    ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
    ASSERT_TRUE(plan->rankMajor.has_value());
    EXPECT_EQ(plan->layout(), planner::TileOrder::RankMajor);
    EXPECT_EQ(plan->tiles(), 12u);
    EXPECT_EQ(plan->rankMajor->getChunks().size(), 3u);
    int64_t sum = 0;
    for (int64_t rows : plan->rankMajor->getChunks())
      sum += rows;
    EXPECT_EQ(sum, 256);
    EXPECT_EQ((*plan->rankMajor)[0].step,
              c == Collective::ReduceScatter ? 1 : 0);
    EXPECT_TRUE(std::isnan(plan->predictedUs));
    EXPECT_TRUE(plan->whole.isWhole(0));
  }
  for (Collective c : {Collective::AllReduce, Collective::AllToAll}) {
    auto plan = planShape(o, c, {1024, 256, 256});
    ASSERT_FALSE(bool(plan));
    std::string why = llvm::toString(plan.takeError());
    EXPECT_NE(why.find("reduce-scatter and all-gather only"), std::string::npos)
        << why;
  }
  o.ranks = 1;
  EXPECT_FALSE(bool(planShape(o, Collective::ReduceScatter, {64, 64, 64})));
  // Interleaved unless forced.
  o.ranks = 4;
  o.layout.reset();
  auto plan = planShape(o, Collective::ReduceScatter, {1024, 256, 256});
  ASSERT_TRUE(bool(plan));
  EXPECT_FALSE(plan->rankMajor.has_value());
  EXPECT_EQ(plan->tiles(), size_t(o.uniformTiles));
}

// The Planner's rank-major plan runs rank-major, with its prediction; a
// plan of the other layout than --layout is set aside with a note.
TEST(BenchSweep, ThePlannersRankMajorPlan) {
  SweepOptions o;
  o.ranks = 8;
  o.profile = datasheet();
  o.strategy = "rank-major";
  const GemmShape s{4096, 8192, 3072};
  auto want = planner::planTiles(
      *o.profile,
      {Collective::ReduceScatter, s.m, s.n, s.k, planner::DType::F16, 8},
      "rank-major");
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  ASSERT_EQ(want->layout, planner::TileOrder::RankMajor);
  auto plan = planShape(o, Collective::ReduceScatter, s);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  ASSERT_TRUE(plan->rankMajor.has_value()) << plan->note;
  EXPECT_EQ(plan->rankMajor->tileRows(), want->tiles);
  EXPECT_DOUBLE_EQ(plan->predictedUs, want->predictedUs);

  o.layout = planner::TileOrder::Interleaved;
  plan = planShape(o, Collective::ReduceScatter, s);
  ASSERT_TRUE(bool(plan));
  EXPECT_FALSE(plan->rankMajor.has_value());
  EXPECT_NE(plan->note.find("the plan is rank-major, --layout interleaved"),
            std::string::npos)
      << plan->note;
  EXPECT_TRUE(std::isnan(plan->predictedUs));

  o.layout = planner::TileOrder::RankMajor;
  o.strategy = "uniform:4";
  o.rankMajorChunks = 2;
  plan = planShape(o, Collective::AllGather, s);
  ASSERT_TRUE(bool(plan));
  ASSERT_TRUE(plan->rankMajor.has_value());
  EXPECT_EQ(plan->tiles(), 16u);
  EXPECT_NE(plan->note.find("the plan is interleaved, --layout rank-major"),
            std::string::npos)
      << plan->note;
}

TEST(BenchSweep, CsvCarriesTheLayout) {
  SweepOptions o;
  o.leg = "sm-copy";
  o.ranks = 4;
  ShapeResult interleaved;
  interleaved.coll = Collective::ReduceScatter;
  interleaved.s = {1024, 256, 128};
  interleaved.tiles = 3;
  interleaved.serial = 10;
  interleaved.overlapped = 8;
  interleaved.ideal = 6;
  ShapeResult rankMajor = interleaved;
  rankMajor.coll = Collective::AllGather;
  rankMajor.tiles = 8;
  rankMajor.layout = planner::TileOrder::RankMajor;
  std::ostringstream csv;
  writeSweepCsv(csv, o, "cuda", "sync=event", {interleaved, rankMajor});
  std::istringstream lines(csv.str());
  std::string line;
  std::vector<std::string> all;
  while (std::getline(lines, line))
    all.push_back(line);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0], "# runtime: cuda");
  auto column = [](const std::string &row, size_t i) {
    std::istringstream cells(row);
    std::string cell;
    for (size_t k = 0; k <= i && std::getline(cells, cell, ','); ++k)
      ;
    return cell;
  };
  EXPECT_EQ(column(all[1], 9), "tiles");
  EXPECT_EQ(column(all[1], 10), "layout");
  EXPECT_EQ(column(all[1], 11), "gemm_us");
  EXPECT_EQ(column(all[2], 0), "sm-copy");
  EXPECT_EQ(column(all[2], 1), "reduce-scatter");
  EXPECT_EQ(column(all[2], 10), "interleaved");
  EXPECT_EQ(column(all[3], 1), "all-gather");
  EXPECT_EQ(column(all[3], 9), "8");
  EXPECT_EQ(column(all[3], 10), "rank-major");
  EXPECT_NE(all[3].find(",\"sync=event\",\"ok\""), std::string::npos) << all[3];
}

} // namespace

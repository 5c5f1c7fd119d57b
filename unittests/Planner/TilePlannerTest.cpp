//===- TilePlannerTest.cpp - Tile strategy tests ---------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/TilePlanner.h"

#include "TestHelpers.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

using namespace overlap::planner;
using namespace overlap::planner::testing_helpers;

namespace {

std::string shipped(llvm::StringRef name) {
  return std::string(OVERLAP_PROFILES_DIR) + "/" + name.str() + ".json";
}

const MatmulProblem kMc2Problem{
    Collective::AllReduce, 4096, 8192, 3072, DType::F16, 8};

int64_t sum(const std::vector<int64_t> &v) {
  return std::accumulate(v.begin(), v.end(), int64_t(0));
}

/// Linear GEMM and comm costs: `gemmPerRow` µs per row, `commPerRow` µs
/// per row of an N = K = 8192 f16 tile, for all three collectives.
Profile linearProfile(double gemmPerRow, double commPerRow) {
  // x = rows of an f16 row of 8192.
  return linearCurvesProfile(8192, 8192, gemmPerRow, 8192.0 * 2, 0, commPerRow);
}

TEST(TilePlanner, Mc2WorkedExample) {
  OVERLAP_ASSIGN_OR_FAIL(profile, loadProfile(shipped("mc2-example")));
  OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(profile, kMc2Problem, "mc2"));
  EXPECT_EQ(plan.tiles, (std::vector<int64_t>{512, 896, 896, 896, 896}));
  EXPECT_EQ(plan.bound, Bound::Comm);
  ASSERT_TRUE(plan.mc2.has_value());
  const Mc2Details &d = *plan.mc2;
  EXPECT_EQ(d.a, 171);
  EXPECT_EQ(d.b, 192);
  EXPECT_EQ(d.c, 384);
  EXPECT_EQ(d.shortRowsInitial, 384); // max(a, b, c), not min
  EXPECT_NEAR(d.balanceUs, 164, 0.5); // 143 µs x 1.15
  EXPECT_EQ(d.longRowsInitial, 768);
  EXPECT_EQ(d.count, 4);
  EXPECT_EQ(d.longRows, 896); // 928 aligned down
  EXPECT_EQ(d.shortRows, 512);
  EXPECT_TRUE(d.shortFirst);
  // Serial from the curves: 803 + CostComm(64 MB).
  EXPECT_NEAR(plan.serialUs, 803 + 13.58491263 * 64 + 61.508333, 1e-6);
  EXPECT_NEAR(plan.idealUs, 13.58491263 * 64 + 61.508333, 1e-6);
  EXPECT_LT(plan.predictedUs, plan.serialUs);
  EXPECT_GE(plan.predictedUs, plan.idealUs);
  EXPECT_GT(plan.efficiency, 0);
  EXPECT_LT(plan.efficiency, 1);
  EXPECT_NEAR(plan.efficiency,
              (plan.serialUs - plan.predictedUs) /
                  (plan.serialUs - plan.idealUs),
              1e-12);
}

TEST(TilePlanner, Mc2ComputeBoundHasShortTail) {
  // GEMM 1 µs/row, comm 0.5 µs/row: compute-bound. m0 = max(64, 86, 384);
  // t0 = 384 x 1.15 = 441.6 µs -> m1 = 883 -> 768; count 4; m1 = 928 -> 896;
  // m0 = 512 at the end.
  Profile p = linearProfile(1.0, 0.5);
  MatmulProblem pb{Collective::AllReduce, 4096, 8192, 8192, DType::F16, 8};
  OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(p, pb, "mc2"));
  EXPECT_EQ(plan.bound, Bound::Compute);
  EXPECT_EQ(plan.tiles, (std::vector<int64_t>{896, 896, 896, 896, 512}));
  EXPECT_EQ(plan.mc2->longRowsInitial, 768);
  EXPECT_FALSE(plan.mc2->shortFirst);
  // All-gather runs the pipeline the other way: the mirror image.
  pb.collective = Collective::AllGather;
  OVERLAP_ASSIGN_OR_FAIL(ag, planTiles(p, pb, "mc2"));
  EXPECT_EQ(ag.tiles, (std::vector<int64_t>{512, 896, 896, 896, 896}));
}

TEST(TilePlanner, Mc2SmallMIsOneTile) {
  OVERLAP_ASSIGN_OR_FAIL(profile, loadProfile(shipped("mc2-example")));
  MatmulProblem pb = kMc2Problem;
  pb.m = 384;
  OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(profile, pb, "mc2"));
  EXPECT_EQ(plan.tiles, (std::vector<int64_t>{384}));
}

// Reduce-scatter and all-gather tiles take tiles[i] / G rows of every
// rank's block: with a group size that does not divide the profile's
// 128-row alignment, every strategy must still return tiles that G divides.
TEST(TilePlanner, PerRankTilesDivideByTheGroupSize) {
  OVERLAP_ASSIGN_OR_FAIL(profile,
                         loadProfile(shipped("h100-nvlink-datasheet")));
  for (Collective coll : {Collective::ReduceScatter, Collective::AllGather}) {
    MatmulProblem pb{coll, 3 * 2000, 4096, 4096, DType::F16, 3};
    for (const char *strategy :
         {"none", "uniform:4", "mc2", "optimal", "ficco", "auto"}) {
      OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(profile, pb, strategy));
      EXPECT_EQ(
          std::accumulate(plan.tiles.begin(), plan.tiles.end(), int64_t{0}),
          pb.m)
          << strategy;
      // (auto may choose rank-major tiles: chunks of one block each, which
      // the group need not divide; RankMajorTest.cpp.)
      if (plan.layout == TileOrder::RankMajor) {
        EXPECT_EQ(std::accumulate(plan.chunks.begin(), plan.chunks.end(),
                                  int64_t{0}),
                  pb.m / 3)
            << strategy;
        continue;
      }
      for (int64_t rows : plan.tiles)
        EXPECT_EQ(rows % 3, 0) << strategy << " tile " << rows;
    }
  }
  // All-reduce tiles keep the profile's alignment; per-rank tiles use
  // lcm(128, 3).
  MatmulProblem ar{Collective::AllReduce, 3 * 2000, 4096, 4096, DType::F16, 3};
  OVERLAP_ASSIGN_OR_FAIL(arModel, CostModel::create(profile, ar));
  EXPECT_EQ(arModel.getAlignment(), 128);
  MatmulProblem rs = ar;
  rs.collective = Collective::ReduceScatter;
  OVERLAP_ASSIGN_OR_FAIL(rsModel, CostModel::create(profile, rs));
  EXPECT_EQ(rsModel.getAlignment(), 384);
}

TEST(TilePlanner, NoneAndUniform) {
  OVERLAP_ASSIGN_OR_FAIL(profile, loadProfile(shipped("mc2-example")));
  OVERLAP_ASSIGN_OR_FAIL(none, planTiles(profile, kMc2Problem, "none"));
  EXPECT_EQ(none.tiles, (std::vector<int64_t>{4096}));
  EXPECT_NEAR(none.predictedUs, none.serialUs, 1e-9);
  EXPECT_EQ(none.efficiency, 0);

  OVERLAP_ASSIGN_OR_FAIL(u3, planTiles(profile, kMc2Problem, "uniform:3"));
  EXPECT_EQ(u3.tiles, (std::vector<int64_t>{1408, 1408, 1280}));
  OVERLAP_ASSIGN_OR_FAIL(tiles, uniformTiles(1000, 2, 128));
  EXPECT_EQ(tiles, (std::vector<int64_t>{512, 488}));

  // 33 tiles of the 32 128-row blocks M = 4096 has: 64-row blocks, and a
  // note that says so (it was an error).
  OVERLAP_ASSIGN_OR_FAIL(u33, planTiles(profile, kMc2Problem, "uniform:33"));
  EXPECT_EQ(u33.tiles.size(), 33u);
  EXPECT_EQ(sum(u33.tiles), 4096);
  for (int64_t t : u33.tiles)
    EXPECT_EQ(t % 64, 0);
  EXPECT_NE(u33.note.find("honoured with 64-row blocks"), std::string::npos)
      << u33.note;
  OVERLAP_ASSIGN_OR_FAIL(u3again, planTiles(profile, kMc2Problem, "uniform:3"));
  EXPECT_TRUE(u3again.note.empty());
  EXPECT_EQ(codeOf(planTiles(profile, kMc2Problem, "uniform:4097")),
            std::make_error_code(std::errc::invalid_argument));
  EXPECT_EQ(codeOf(planTiles(profile, kMc2Problem, "uniform:0")),
            std::make_error_code(std::errc::invalid_argument));
  EXPECT_EQ(codeOf(planTiles(profile, kMc2Problem, "uniform:x")),
            std::make_error_code(std::errc::invalid_argument));
  std::string e = errorOf(planTiles(profile, kMc2Problem, "greedy"));
  EXPECT_NE(e.find("--strategy"), std::string::npos) << e;
}

TEST(TilePlanner, OptimalBeatsMc2OnTheSeedCase) {
  OVERLAP_ASSIGN_OR_FAIL(profile, loadProfile(shipped("mc2-example")));
  OVERLAP_ASSIGN_OR_FAIL(mc2, planTiles(profile, kMc2Problem, "mc2"));
  OVERLAP_ASSIGN_OR_FAIL(opt, planTiles(profile, kMc2Problem, "optimal"));
  EXPECT_LE(opt.predictedUs, mc2.predictedUs + 1e-9);
  EXPECT_EQ(sum(opt.tiles), 4096);
  for (int64_t t : opt.tiles)
    EXPECT_EQ(t % 128, 0);
}

/// A random nondecreasing curve: piecewise linear/quadratic or a table.
Curve randomCurve(std::mt19937_64 &rng, double xMax, double scale) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (u(rng) < 0.5) {
    std::vector<std::pair<double, double>> pts;
    double y = u(rng) * scale * 0.2;
    for (int i = 0; i <= 6; ++i) {
      pts.emplace_back(xMax * i / 6.0, y);
      y += u(rng) * scale;
    }
    return Curve::table(pts);
  }
  double c0 = u(rng) * scale * 0.3;
  double c1 = (0.2 + u(rng)) * scale / xMax * 4;
  double c2 = (u(rng) - 0.5) * c1 / xMax; // keeps it increasing on [0, xMax]
  return Curve::piecewise(
      {{0, xMax / 2, {c0, c1, c2}},
       {xMax / 2,
        INFINITY,
        {c0 + c1 * xMax / 2 + c2 * xMax * xMax / 4 - c1 * xMax / 2 * 1.1,
         c1 * 1.1}}});
}

Profile randomProfile(std::mt19937_64 &rng, int64_t n, int64_t k) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Profile p;
  p.source = "random";
  p.alignment = 128;
  // Mostly realistic factors, sometimes none, sometimes severe (so that
  // cC (1 - 1/cP) > 1 is covered too).
  double r = u(rng);
  double spread = r < 0.15 ? 0.0 : r < 0.3 ? 3.0 : 0.5;
  p.computeContention = 1.0 + spread * u(rng);
  p.commContention = u(rng) < 0.3 ? p.computeContention : 1.0 + spread * u(rng);
  p.gemmLatencyUs = u(rng) < 0.5 ? 0.0 : 20 * u(rng);
  addCurves(p, n, k, randomCurve(rng, 2048, 100 + 400 * u(rng)), [&] {
    CommCurve cc;
    cc.bytesPerUnit = 1024.0 * 1024.0;
    cc.latencyUs = u(rng) < 0.5 ? 0.0 : 30 * u(rng);
    cc.curve = randomCurve(rng, 16, 100 + 400 * u(rng));
    return cc;
  });
  return p;
}

/// Minimum predicted makespan over every tiling in optimal's domain:
/// multiples of the alignment, the first or last tile also taking M mod it.
double bruteForce(const Profile &p, const MatmulProblem &pb,
                  std::vector<int64_t> *bestTiles) {
  const int64_t a = p.alignment, blocks = pb.m / a, rem = pb.m % a;
  double best = std::numeric_limits<double>::infinity();
  for (int head = 0; head < (rem ? 2 : 1); ++head) {
    for (uint64_t mask = 0; mask < (uint64_t(1) << (blocks - 1)); ++mask) {
      std::vector<int64_t> tiles;
      int64_t start = 0;
      for (int64_t b = 1; b <= blocks; ++b) {
        if (b == blocks || (mask >> (b - 1) & 1)) {
          tiles.push_back((b - start) * a);
          start = b;
        }
      }
      (head ? tiles.front() : tiles.back()) += rem;
      llvm::Expected<Plan> plan = evaluateTiles(p, pb, tiles);
      if (!plan) {
        ADD_FAILURE() << llvm::toString(plan.takeError());
        return best;
      }
      if (plan->predictedUs < best) {
        best = plan->predictedUs;
        if (bestTiles)
          *bestTiles = tiles;
      }
    }
  }
  return best;
}

TEST(TilePlanner, OptimalEqualsBruteForceOnRandomCases) {
  std::mt19937_64 rng(2024);
  std::uniform_int_distribution<int64_t> blocksDist(1, 11);
  std::uniform_int_distribution<int64_t> remDist(0, 127);
  const Collective colls[] = {Collective::AllReduce, Collective::ReduceScatter,
                              Collective::AllGather};
  for (int trial = 0; trial < 300; ++trial) {
    Profile p = randomProfile(rng, 4096, 2048);
    // Reduce-scatter and all-gather tiles below M are batched GEMMs, priced
    // apart from the whole of M: by tile quantization (64 to 256-row output
    // tiles) in some trials, by a batch curve in others. All-reduce ignores
    // both.
    if (trial % 4 == 1)
      p.device.gemmTile = {{int64_t(64) << (trial / 4 % 3), 128}};
    if (trial % 4 == 2) {
      GemmCurve batched = p.gemmCurves.front();
      batched.batch = 8;
      batched.curve = randomCurve(rng, 2048, 200 + 400 * (trial % 5));
      p.gemmCurves.push_back(batched);
    }
    MatmulProblem pb{colls[trial % 3], 0, 4096, 2048, DType::F16, 8};
    int64_t rem = pb.collective == Collective::AllReduce ? remDist(rng) : 0;
    pb.m = blocksDist(rng) * 128 + rem;
    if (pb.collective != Collective::AllReduce)
      pb.m -= pb.m % 8;
    std::vector<int64_t> bruteTiles;
    double brute = bruteForce(p, pb, &bruteTiles);
    OVERLAP_ASSIGN_OR_FAIL(opt, planTiles(p, pb, "optimal"));
    EXPECT_NEAR(opt.predictedUs, brute, 1e-9 * brute)
        << "trial " << trial << " M=" << pb.m;
    EXPECT_EQ(sum(opt.tiles), pb.m);
    for (llvm::StringRef other : {"none", "mc2", "uniform:1"}) {
      OVERLAP_ASSIGN_OR_FAIL(o, planTiles(p, pb, other));
      EXPECT_LE(opt.predictedUs, o.predictedUs * (1 + 1e-12))
          << other.str() << " trial " << trial;
    }
  }
}

TEST(TilePlanner, OptimalNeverWorseThanMc2AtScale) {
  OVERLAP_ASSIGN_OR_FAIL(profile,
                         loadProfile(shipped("h100-nvlink-datasheet")));
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather}) {
    for (int64_t m : {4096, 16384, 16384 + 64}) {
      MatmulProblem pb{c, m, 8192, 3072, DType::BF16, 8};
      if (c != Collective::AllReduce && m % 8)
        continue;
      OVERLAP_ASSIGN_OR_FAIL(opt, planTiles(profile, pb, "optimal"));
      OVERLAP_ASSIGN_OR_FAIL(mc2, planTiles(profile, pb, "mc2"));
      EXPECT_LE(opt.predictedUs, mc2.predictedUs * (1 + 1e-12));
      EXPECT_GE(opt.predictedUs, opt.lowerBoundUs - 1e-9);
      EXPECT_GE(opt.predictedUs, opt.idealUs - 1e-9);
      EXPECT_EQ(sum(opt.tiles), m);
    }
  }
}

TEST(TilePlanner, WavesExhaustiveOnSmallGemm) {
  OVERLAP_ASSIGN_OR_FAIL(profile,
                         loadProfile(shipped("h100-nvlink-datasheet")));
  MatmulProblem pb{Collective::AllReduce, 4096, 8192, 3072, DType::F16, 8};
  OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(profile, pb, "waves"));
  ASSERT_TRUE(plan.waves.has_value());
  const WaveDetails &w = *plan.waves;
  // 32 x 32 output tiles of 128x256; 132 - 16 SMs per wave -> 9 waves.
  EXPECT_EQ(w.outputTiles, 1024);
  EXPECT_EQ(w.tilesPerWave, 116);
  EXPECT_EQ(w.waves, 9);
  EXPECT_TRUE(w.exhaustive);
  EXPECT_EQ(w.candidatesEvaluated, 256u); // 2^(9-1)
  EXPECT_EQ(std::accumulate(w.groups.begin(), w.groups.end(), int64_t(0)), 9);
  EXPECT_EQ(w.groups.size(), plan.tiles.size());
  EXPECT_EQ(sum(plan.tiles), 4096);
  EXPECT_TRUE(plan.singleGemmKernel);
  // One kernel: the compute stream's work is the waves' time, whatever the
  // grouping.
  EXPECT_NEAR(plan.timeline.computeWorkUs, 9 * w.waveUs, 1e-9);
  // Not worse than sending everything after the last wave.
  Plan single = plan;
  single.tiles = {4096};
  single.computeUs = {9 * w.waveUs};
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(profile, pb));
  ASSERT_FALSE(bool(finishPlan(model, single)));
  EXPECT_LE(plan.predictedUs, single.predictedUs);
  EXPECT_GT(plan.tiles.size(), 1u);
}

TEST(TilePlanner, WavesPrunedOnLargeGemm) {
  OVERLAP_ASSIGN_OR_FAIL(profile,
                         loadProfile(shipped("h100-nvlink-datasheet")));
  MatmulProblem pb{Collective::ReduceScatter, 65536, 8192, 3072, DType::F16, 8};
  OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(profile, pb, "waves"));
  const WaveDetails &w = *plan.waves;
  EXPECT_EQ(w.waves, (512 * 32 + 115) / 116);
  EXPECT_FALSE(w.exhaustive);
  EXPECT_GT(w.candidatesEvaluated, 16u);
  EXPECT_LT(w.candidatesEvaluated, 16u * uint64_t(w.waves) + 2);
  ASSERT_GE(w.groups.size(), 1u);
  if (w.groups.size() > 1) {
    EXPECT_LE(w.groups.front(), 4);
    EXPECT_LE(w.groups.back(), 4);
  }
  EXPECT_EQ(sum(plan.tiles), 65536);
}

TEST(TilePlanner, WavesNeedsDeviceAndOutputCollective) {
  OVERLAP_ASSIGN_OR_FAIL(mc2, loadProfile(shipped("mc2-example")));
  std::string e = errorOf(planTiles(mc2, kMc2Problem, "waves"));
  EXPECT_NE(e.find("device.sm_count"), std::string::npos) << e;
  EXPECT_EQ(codeOf(planTiles(mc2, kMc2Problem, "waves")),
            std::make_error_code(std::errc::not_supported));
  OVERLAP_ASSIGN_OR_FAIL(h100, loadProfile(shipped("h100-nvlink-datasheet")));
  MatmulProblem ag{Collective::AllGather, 4096, 8192, 3072, DType::F16, 8};
  e = errorOf(planTiles(h100, ag, "waves"));
  EXPECT_NE(e.find("all-gather"), std::string::npos) << e;
}

TEST(TilePlanner, FiccoHeuristic) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  struct Case {
    int64_t m, n, k;
    const char *schedule;
    int64_t calls;
  } cases[] = {
      // 2*4096*8192*3072 FLOP = 0.21 x (989.4 TFLOP/s x 1 ms): low.
      {4096, 8192, 3072, "uniform-fused-1D", 1},
      // 4.4e12 FLOP = 4.4x: middle tranche.
      {16384, 16384, 8192, "hetero-fused-1D", 1},
      // 8.8e12 FLOP = 8.9x: high.
      {32768, 16384, 8192, "hetero-unfused-1D", 8},
      // M <= K: 2D.
      {2048, 8192, 4096, "uniform-fused-2D", 1},
  };
  for (const Case &c : cases) {
    MatmulProblem pb{Collective::AllGather, c.m, c.n, c.k, DType::F16, 8};
    OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(p, pb, "ficco"));
    ASSERT_TRUE(plan.ficco.has_value());
    EXPECT_EQ(plan.ficco->schedule, c.schedule) << c.m;
    EXPECT_FALSE(plan.ficco->reason.empty());
    EXPECT_EQ(plan.gemmCallsPerTile, c.calls);
    EXPECT_EQ(plan.tiles.size(), 8u); // one step per rank
    EXPECT_EQ(sum(plan.tiles), c.m);
    double mt = (double(c.m) * c.k + double(c.n) * c.k + double(c.m) * c.n) * 2;
    EXPECT_DOUBLE_EQ(plan.ficco->memoryTrafficBytes, mt);
  }
  OVERLAP_ASSIGN_OR_FAIL(mc2, loadProfile(shipped("mc2-example")));
  std::string e = errorOf(planTiles(mc2, kMc2Problem, "ficco"));
  EXPECT_NE(e.find("peak_tflops.f16"), std::string::npos) << e;
}

TEST(TilePlanner, AutoPicksTheBestCandidate) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  MatmulProblem pb{Collective::AllReduce, 8192, 8192, 4096, DType::BF16, 8};
  OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(p, pb, "auto"));
  EXPECT_EQ(plan.selectedBy, "auto");
  double best = std::numeric_limits<double>::infinity();
  size_t ok = 0;
  for (const Candidate &c : plan.candidates) {
    if (c.ok) {
      best = std::min(best, c.predictedUs);
      ++ok;
    }
  }
  // This profile supports them all but rank-major, which an all-reduce
  // does not have.
  EXPECT_EQ(ok + 1, plan.candidates.size());
  for (const Candidate &c : plan.candidates)
    if (c.strategy == "rank-major") {
      EXPECT_FALSE(c.ok);
      EXPECT_NE(c.note.find("only reduce-scatter and all-gather"),
                std::string::npos)
          << c.note;
    }
  EXPECT_DOUBLE_EQ(plan.predictedUs, best);
  OVERLAP_ASSIGN_OR_FAIL(opt, planTiles(p, pb, "optimal"));
  EXPECT_LE(plan.predictedUs, opt.predictedUs);

  // Strategies the profile cannot support are listed with the reason.
  OVERLAP_ASSIGN_OR_FAIL(mc2, loadProfile(shipped("mc2-example")));
  OVERLAP_ASSIGN_OR_FAIL(a2, planTiles(mc2, kMc2Problem, "auto"));
  bool sawSkippedWaves = false;
  for (const Candidate &c : a2.candidates)
    if (c.strategy == "waves" && !c.ok && !c.note.empty())
      sawSkippedWaves = true;
  EXPECT_TRUE(sawSkippedWaves);
  EXPECT_EQ(a2.strategy, "optimal");
}

TEST(TilePlanner, SingleRankHasNoCommunication) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("mc2-example")));
  MatmulProblem pb = kMc2Problem;
  pb.ranks = 1;
  OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(p, pb, "optimal"));
  EXPECT_NEAR(plan.predictedUs, 803, 1e-9);
  EXPECT_EQ(plan.efficiency, 0);
}

TEST(TilePlanner, EvaluateTilesChecksTheSum) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("mc2-example")));
  EXPECT_EQ(codeOf(evaluateTiles(p, kMc2Problem, {1024, 1024})),
            std::make_error_code(std::errc::invalid_argument));
  EXPECT_EQ(codeOf(evaluateTiles(p, kMc2Problem, {4096, 0})),
            std::make_error_code(std::errc::invalid_argument));
  OVERLAP_ASSIGN_OR_FAIL(
      plan, evaluateTiles(p, kMc2Problem, {512, 896, 896, 896, 896}, "mine"));
  OVERLAP_ASSIGN_OR_FAIL(mc2, planTiles(p, kMc2Problem, "mc2"));
  EXPECT_DOUBLE_EQ(plan.predictedUs, mc2.predictedUs);
  EXPECT_EQ(plan.strategy, "mine");
}

} // namespace

/// The message of an Error, "" for success.
static std::string messageOf(llvm::Error e) {
  return e ? llvm::toString(std::move(e)) : std::string();
}

TEST(TilePlanner, CheckStrategyWithoutAProblem) {
  for (const char *ok : {"none", "uniform:1", "uniform:16", "mc2", "optimal",
                         "waves", "ficco", "rank-major", "auto"})
    EXPECT_EQ(messageOf(checkStrategy(ok)), "") << ok;
  EXPECT_EQ(messageOf(checkStrategy("optimum")),
            "--strategy: expected none, uniform:n, mc2, optimal, waves, ficco, "
            "rank-major or auto, got 'optimum'");
  EXPECT_EQ(messageOf(checkStrategy("uniform:0")),
            "--strategy: uniform:n needs a positive integer n, got '0'");
  EXPECT_NE(messageOf(checkStrategy("uniform:")), "");
  EXPECT_NE(messageOf(checkStrategy("uniform:n")), "");
  // Every name strategyNames() lists is accepted (uniform:n as uniform:2).
  for (llvm::StringRef name : strategyNames())
    EXPECT_EQ(
        messageOf(checkStrategy(name == "uniform:n" ? "uniform:2" : name)), "")
        << name.str();
}

//===- RankMajorTest.cpp - Rank-major tiles of RS and AG --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The rank-major layout (RankMajor.h): its mapping of tiles to rows and
// peers, its pricing (one contiguous GEMM and one shift per chunk, the
// reduce-scatter's final sum), the `rank-major` strategy against the
// interleaved ones, and `auto`'s margin (a split must beat serial by more
// than the profile's prediction error).
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Json.h"
#include "overlap/Planner/RankMajor.h"
#include "overlap/Planner/TilePlanner.h"

#include "TestHelpers.h"

#include "llvm/Support/JSON.h"
#include "gtest/gtest.h"

#include <limits>
#include <numeric>

using namespace overlap::planner;
using namespace overlap::planner::testing_helpers;

namespace {

std::string shipped(llvm::StringRef name) {
  return std::string(OVERLAP_PROFILES_DIR) + "/" + name.str() + ".json";
}

int64_t sum(llvm::ArrayRef<int64_t> v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

/// Every rank computes every row of the full product exactly once, the
/// steps come in the documented order, and every shift pairs a sender with
/// the receiver that expects it.
TEST(RankMajor, MapsEveryRowOncePerRank) {
  for (Collective coll : {Collective::ReduceScatter, Collective::AllGather})
    for (int64_t g : {2, 4, 8})
      for (const std::vector<int64_t> &chunks :
           {std::vector<int64_t>{96}, {32, 64}, {16, 48, 32}}) {
        const int64_t block = sum(chunks), m = g * block;
        const int64_t k = static_cast<int64_t>(chunks.size());
        std::string what = toString(coll).str() + " G=" + std::to_string(g) +
                           " k=" + std::to_string(k);
        OVERLAP_ASSIGN_OR_FAIL(l, RankMajorLayout::create(coll, m, g, chunks));
        ASSERT_EQ(l.size(), static_cast<size_t>(g * k)) << what;
        EXPECT_EQ(l.blockSize(), block) << what;
        EXPECT_EQ(sum(l.tileRows()), m) << what;
        for (size_t t = 0; t < l.size(); ++t) {
          int64_t i = static_cast<int64_t>(t) / k;
          // RS: steps 1..G-1 then 0; AG: 0..G-1. Chunks in order.
          int64_t step =
              coll == Collective::ReduceScatter ? (i + 1) % g : i;
          EXPECT_EQ(l[t].step, step) << what << " tile " << t;
          EXPECT_EQ(l[t].chunk, static_cast<int64_t>(t) % k) << what;
          EXPECT_EQ(l[t].rows, chunks[l[t].chunk]) << what;
          EXPECT_EQ(l.exchanges(t), step != 0) << what;
          EXPECT_EQ(l.shift(t),
                    coll == Collective::ReduceScatter ? step : -step)
              << what;
        }
        for (int64_t r = 0; r < g; ++r) {
          std::vector<int> seen(m, 0);
          for (size_t t = 0; t < l.size(); ++t) {
            int64_t first = l.globalRow(t, r);
            EXPECT_EQ(first, l.block(t, r) * block + l[t].chunkOffset);
            for (int64_t row = first; row < first + l[t].rows; ++row)
              ++seen[row];
            int64_t to = l.sendPeer(t, r), from = l.recvPeer(t, r);
            // The peer r sends to receives from r, on the same tile.
            EXPECT_EQ(l.recvPeer(t, to), r) << what;
            if (!l.exchanges(t)) {
              EXPECT_EQ(to, r) << what;
              EXPECT_EQ(l.block(t, r), r) << what; // own block
              continue;
            }
            if (coll == Collective::ReduceScatter) {
              // The partial goes to its block's owner, and what arrives is
              // a partial of r's own block.
              EXPECT_EQ(to, l.block(t, r)) << what;
              EXPECT_EQ(l.block(t, from), r) << what;
            } else {
              // r receives the block it computes, from its owner.
              EXPECT_EQ(from, l.block(t, r)) << what;
            }
          }
          for (int64_t row = 0; row < m; ++row)
            ASSERT_EQ(seen[row], 1) << what << " rank " << r << " row " << row;
        }
      }
}

TEST(RankMajor, RefusesWhatItCannotLayOut) {
  auto err = [](Collective c, int64_t m, int64_t g,
                std::vector<int64_t> chunks) {
    auto l = RankMajorLayout::create(c, m, g, chunks);
    EXPECT_EQ(codeOf(RankMajorLayout::create(c, m, g, chunks)),
              std::make_error_code(std::errc::invalid_argument));
    return errorOf(std::move(l));
  };
  const Collective rs = Collective::ReduceScatter;
  EXPECT_NE(err(Collective::AllReduce, 64, 2, {32}).find("not all-reduce"),
            std::string::npos);
  EXPECT_NE(err(Collective::AllToAll, 64, 2, {32}).find("not all-to-all"),
            std::string::npos);
  EXPECT_NE(err(rs, 64, 1, {64}).find("group of 2"), std::string::npos);
  EXPECT_NE(err(rs, 65, 2, {32}).find("multiple of the group"),
            std::string::npos);
  EXPECT_NE(err(rs, 64, 2, {16, 8}).find("not a block's M/G = 32"),
            std::string::npos);
  EXPECT_NE(err(rs, 64, 2, {16, 0, 16}).find("positive"), std::string::npos);
  EXPECT_NE(err(rs, 64, 2, {}).find("no chunks"), std::string::npos);
  EXPECT_NE(err(rs, 64, 2, {40}).find("more than a block"), std::string::npos);
  EXPECT_NE(err(rs, 2 * 4096, 2, std::vector<int64_t>(4096, 1))
                .find("more than 4096 tiles"),
            std::string::npos);
}

/// A linear profile measured at 4 ranks (no ring rescaling): GEMM
/// `perRow` µs a row; every collective 5 µs + 10 µs per MiB; memory
/// bandwidth 1000 GB/s.
Profile handProfile(double perRow, double commLatency = 5) {
  Profile p = linearCurvesProfile(1024, 512, perRow, 1 << 20, commLatency, 10);
  for (CommCurve &c : p.commCurves)
    c.ranks = 4;
  p.computeContention = p.commContention = 1.0;
  p.device.memoryBandwidth = 1000e9;
  return p;
}

TEST(RankMajor, PricesByHand) {
  Profile p = handProfile(0.1);
  MatmulProblem rs{Collective::ReduceScatter, 4096, 1024, 512, DType::F16, 4};
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, rs));
  // 256 rows x 1024 x 2 B = 0.5 MiB on the wire: the ring buffer of 4/3 of
  // it, 2/3 MiB: 5 + 10 x 2/3.
  EXPECT_DOUBLE_EQ(model.shiftBytes(256), 256.0 * 1024 * 2);
  EXPECT_NEAR(model.shiftUs(256), 5 + 10.0 * 2 / 3, 1e-9);
  EXPECT_NEAR(model.shiftUs(1024), 5 + 10.0 * 8 / 3, 1e-9);
  // The final sum: (G + 1) x M/G x N x 2 B at 1000 GB/s.
  EXPECT_NEAR(*model.rankMajorSumUs(), 5.0 * 1024 * 1024 * 2 / 1e12 * 1e6,
              1e-9);

  // Compute-bound, one chunk a block: four GEMMs of 102.4 us back to back,
  // the shifts hidden, then the sum.
  OVERLAP_ASSIGN_OR_FAIL(plan, priceRankMajor(model, {1024}, "rank-major"));
  EXPECT_EQ(plan.layout, TileOrder::RankMajor);
  EXPECT_EQ(plan.tiles, (std::vector<int64_t>{1024, 1024, 1024, 1024}));
  const double shift = 5 + 10.0 * 8 / 3, tail = 10.48576;
  ASSERT_EQ(plan.commUs.size(), 4u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(plan.commUs[i], shift, 1e-9);
  EXPECT_EQ(plan.commUs[3], 0.0); // step 0, last
  for (double c : plan.computeUs)
    EXPECT_NEAR(c, 102.4, 1e-9);
  EXPECT_NEAR(plan.tailUs, tail, 1e-9);
  EXPECT_NEAR(plan.predictedUs, 4 * 102.4 + tail, 1e-9);
  EXPECT_NEAR(plan.lowerBoundUs, 4 * 102.4 + tail, 1e-9);

  // Comm-bound (GEMM 0.01 us a row): the first GEMM, three shifts, the sum.
  Profile fast = handProfile(0.01);
  OVERLAP_ASSIGN_OR_FAIL(fastModel, CostModel::create(fast, rs));
  OVERLAP_ASSIGN_OR_FAIL(cb, priceRankMajor(fastModel, {1024}, "rank-major"));
  EXPECT_NEAR(cb.predictedUs, 10.24 + 3 * shift + tail, 1e-9);
  EXPECT_NEAR(cb.lowerBoundUs, 3 * shift + tail, 1e-9);
  // Two chunks: the first GEMM halves, the shifts pay their latency twice.
  OVERLAP_ASSIGN_OR_FAIL(cb2,
                         priceRankMajor(fastModel, {512, 512}, "rank-major"));
  const double half = 5 + 10.0 * 4 / 3;
  EXPECT_EQ(cb2.tiles.size(), 8u);
  EXPECT_NEAR(cb2.predictedUs, 5.12 + 6 * half + tail, 1e-9);

  // All-gather: no sum; the local block's GEMM (step 0) runs while the first
  // chunk arrives, each later GEMM after its shift: comm-bound, the shifts
  // and the last GEMM.
  MatmulProblem ag = rs;
  ag.collective = Collective::AllGather;
  OVERLAP_ASSIGN_OR_FAIL(agModel, CostModel::create(fast, ag));
  // A's rows: 1024 x K = 512 x 2 B.
  const double agShift = 5 + 10.0 * 4 / 3;
  EXPECT_NEAR(agModel.shiftUs(1024), agShift, 1e-9);
  EXPECT_EQ(*agModel.rankMajorSumUs(), 0.0);
  OVERLAP_ASSIGN_OR_FAIL(agPlan, priceRankMajor(agModel, {1024}, "x"));
  ASSERT_EQ(agPlan.commUs.size(), 4u);
  EXPECT_EQ(agPlan.commUs[0], 0.0); // step 0, first
  for (size_t i = 1; i < 4; ++i)
    EXPECT_NEAR(agPlan.commUs[i], agShift, 1e-9);
  EXPECT_EQ(agPlan.tailUs, 0.0);
  EXPECT_NEAR(agPlan.predictedUs, 3 * agShift + 10.24, 1e-9);

  // Without a memory bandwidth the reduce-scatter's sum has no price.
  Profile noBw = handProfile(0.1);
  noBw.device.memoryBandwidth.reset();
  OVERLAP_ASSIGN_OR_FAIL(noBwModel, CostModel::create(noBw, rs));
  EXPECT_FALSE(noBwModel.rankMajorSumUs().has_value());
  std::string e = errorOf(planTiles(noBw, rs, "rank-major"));
  EXPECT_NE(e.find("no device.memory_bandwidth_gbps"), std::string::npos) << e;
  // All-gather needs none.
  ag.collective = Collective::AllGather;
  EXPECT_TRUE(bool(planTiles(noBw, ag, "rank-major")));
}

/// Exchange groups (Plan::groups): a group's GEMMs, then ONE exchange of
/// all its exchanged units' rows, one per-call latency.
TEST(RankMajor, PricesGroupsByHand) {
  Profile fast = handProfile(0.01);
  MatmulProblem rs{Collective::ReduceScatter, 4096, 1024, 512, DType::F16, 4};
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(fast, rs));
  const double tail = 10.48576;
  // Units (chunk 1024): steps 1, 2, 3, 0. Groups {2, 2}: steps 1+2, then
  // 3+0. Group 0: two GEMMs of 10.24 us, one exchange of 2048 rows (4 MiB
  // on the wire, the ring buffer of 16/3 MiB); group 1: two GEMMs, one
  // exchange of step 3's 1024 rows only (step 0 stays).
  OVERLAP_ASSIGN_OR_FAIL(plan,
                         priceRankMajor(model, {1024}, {2, 2}, "rank-major"));
  EXPECT_EQ(plan.tiles, (std::vector<int64_t>{1024, 1024, 1024, 1024}));
  EXPECT_EQ(plan.groups, (std::vector<int64_t>{2, 2}));
  ASSERT_EQ(plan.computeUs.size(), 2u);
  ASSERT_EQ(plan.commUs.size(), 2u);
  const double g0 = 5 + 10.0 * 16 / 3, g1 = 5 + 10.0 * 8 / 3;
  EXPECT_NEAR(plan.computeUs[0], 20.48, 1e-9);
  EXPECT_NEAR(plan.computeUs[1], 20.48, 1e-9);
  EXPECT_NEAR(plan.commUs[0], g0, 1e-9);
  EXPECT_NEAR(plan.commUs[1], g1, 1e-9);
  // Comm-bound: group 0's GEMMs, both exchanges back to back, the sum.
  EXPECT_NEAR(plan.predictedUs, 20.48 + g0 + g1 + tail, 1e-9);
  EXPECT_NEAR(plan.lowerBoundUs, g0 + g1 + tail, 1e-9);
  EXPECT_EQ(taskUnits(plan), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(taskRows(plan), (std::vector<int64_t>{2048, 2048}));
  // {3, 1}: the own block alone last has nothing to exchange.
  OVERLAP_ASSIGN_OR_FAIL(last, priceRankMajor(model, {1024}, {3, 1}, "x"));
  EXPECT_NEAR(last.commUs[0], 5 + 10.0 * 24 / 3, 1e-9);
  EXPECT_EQ(last.commUs[1], 0.0);
  EXPECT_NEAR(last.predictedUs, 3 * 10.24 + 5 + 80 + tail, 1e-9);

  // All-gather, groups {1, 3}: the local block alone (no exchange), then
  // one exchange of steps 1..3 (3 x 1024 rows of K = 512: 3 MiB on the
  // wire, the ring buffer 4 MiB) before their three GEMMs.
  MatmulProblem ag = rs;
  ag.collective = Collective::AllGather;
  OVERLAP_ASSIGN_OR_FAIL(agModel, CostModel::create(fast, ag));
  OVERLAP_ASSIGN_OR_FAIL(agPlan, priceRankMajor(agModel, {1024}, {1, 3}, "x"));
  ASSERT_EQ(agPlan.commUs.size(), 2u);
  EXPECT_EQ(agPlan.commUs[0], 0.0);
  EXPECT_NEAR(agPlan.commUs[1], 5 + 10.0 * 4, 1e-9);
  EXPECT_NEAR(agPlan.computeUs[1], 3 * 10.24, 1e-9);
  EXPECT_NEAR(agPlan.predictedUs, 45 + 3 * 10.24, 1e-9);
  // The same through evaluateRankMajor.
  OVERLAP_ASSIGN_OR_FAIL(same, evaluateRankMajor(fast, ag, {1024}, {1, 3}));
  EXPECT_EQ(same.predictedUs, agPlan.predictedUs);
  EXPECT_EQ(same.strategy, "rank-major");
}

/// Groups of one unit each are today's plans: the same prices, bit for bit.
TEST(RankMajor, AllOnesGroupsPriceAsUngrouped) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h200-measured")));
  for (Collective coll : {Collective::ReduceScatter, Collective::AllGather}) {
    MatmulProblem pb{coll, 8192, 8192, 3072, DType::BF16, 8};
    OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, pb));
    for (const std::vector<int64_t> &cut :
         {std::vector<int64_t>{1024}, {512, 512}, {128, 640, 256}}) {
      OVERLAP_ASSIGN_OR_FAIL(plain, priceRankMajor(model, cut, "x"));
      std::vector<int64_t> ones(8 * cut.size(), 1);
      OVERLAP_ASSIGN_OR_FAIL(grouped, priceRankMajor(model, cut, ones, "x"));
      EXPECT_TRUE(plain.groups.empty());
      EXPECT_EQ(grouped.groups, ones);
      EXPECT_EQ(grouped.tiles, plain.tiles);
      EXPECT_EQ(grouped.computeUs, plain.computeUs);
      EXPECT_EQ(grouped.commUs, plain.commUs);
      EXPECT_EQ(grouped.predictedUs, plain.predictedUs);
      EXPECT_EQ(grouped.lowerBoundUs, plain.lowerBoundUs);
      EXPECT_EQ(grouped.tailUs, plain.tailUs);
      EXPECT_EQ(taskUnits(plain), ones);
      EXPECT_EQ(taskRows(plain), plain.tiles);
    }
  }
}

TEST(RankMajor, RefusesBadGroups) {
  Profile p = handProfile(0.01);
  MatmulProblem rs{Collective::ReduceScatter, 4096, 1024, 512, DType::F16, 4};
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, rs));
  auto err = [&](std::vector<int64_t> groups) {
    EXPECT_EQ(codeOf(priceRankMajor(model, {512, 512}, groups, "rm")),
              std::make_error_code(std::errc::invalid_argument));
    return errorOf(priceRankMajor(model, {512, 512}, groups, "rm"));
  };
  // 8 units (4 blocks x 2 chunks).
  EXPECT_NE(err({4, 0, 4}).find("rm: an exchange group of 0 units (groups "
                                "are positive)"),
            std::string::npos);
  EXPECT_NE(err({-1, 9}).find("of -1 units"), std::string::npos);
  EXPECT_NE(err({4, 3}).find("exchange groups sum to 7, not the 8 units"),
            std::string::npos);
  EXPECT_NE(err({4, 5}).find("sum to more than the 8 units"),
            std::string::npos);
  EXPECT_NE(err(std::vector<int64_t>(4097, 1))
                .find("4097 exchange groups are more than 4096"),
            std::string::npos);
  std::string e =
      errorOf(evaluateRankMajor(p, rs, {512, 512}, {8, 1}, "given"));
  EXPECT_NE(e.find("given: exchange groups sum to more than the 8 units"),
            std::string::npos)
      << e;
}

/// The search keeps all-ones unless a grouping is strictly better: it is
/// never worse than the ungrouped plan of any cut it tries.
TEST(RankMajor, GroupingNeverWorseThanAllOnes) {
  std::vector<Profile> profiles = {handProfile(0.02), handProfile(0.002),
                                   handProfile(0.01, 40)};
  OVERLAP_ASSIGN_OR_FAIL(h200, loadProfile(shipped("h200-measured")));
  OVERLAP_ASSIGN_OR_FAIL(h100, loadProfile(shipped("h100-nvlink-datasheet")));
  for (Collective coll : {Collective::ReduceScatter, Collective::AllGather}) {
    for (size_t i = 0; i < profiles.size() + 2; ++i) {
      bool shippedProfile = i >= profiles.size();
      const Profile &p = i < profiles.size()    ? profiles[i]
                         : i == profiles.size() ? h200
                                                : h100;
      MatmulProblem pb =
          shippedProfile
              ? MatmulProblem{coll, 8192, 8192, 3072, DType::BF16, 8}
              : MatmulProblem{coll, 8 * 1024, 1024, 512, DType::F16, 4};
      std::string what = toString(coll).str() + " profile " + std::to_string(i);
      OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, pb));
      OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(p, pb, "rank-major"));
      OVERLAP_ASSIGN_OR_FAIL(ones, priceRankMajor(model, plan.chunks, "x"));
      EXPECT_LE(plan.predictedUs, ones.predictedUs) << what;
      const int64_t block = pb.m / pb.ranks;
      for (int64_t k : {1, 2, 4, 8}) {
        std::vector<int64_t> cut(k, block / k);
        OVERLAP_ASSIGN_OR_FAIL(other, priceRankMajor(model, cut, "x"));
        EXPECT_LE(plan.predictedUs, other.predictedUs * (1 + 1e-12))
            << what << " k=" << k;
      }
      // An all-ones choice is reported with no groups.
      if (!plan.groups.empty()) {
        EXPECT_LT(plan.predictedUs, ones.predictedUs) << what;
        EXPECT_LT(plan.groups.size(), plan.tiles.size()) << what;
      }
    }
  }
}

/// The per-call latency is what grouping saves: with none (linear curves
/// through 0), fusing exchanges never helps and the search keeps one unit
/// per exchange; with 200 us a call it fuses them, and the fused plan
/// beats every ungrouped cut.
TEST(RankMajor, GroupingWinsOnPerCallLatency) {
  for (Collective coll : {Collective::ReduceScatter, Collective::AllGather}) {
    MatmulProblem pb{coll, 8 * 1024, 1024, 512, DType::F16, 4};
    Profile noLatency = handProfile(0.01, 0);
    OVERLAP_ASSIGN_OR_FAIL(flat, planTiles(noLatency, pb, "rank-major"));
    EXPECT_TRUE(flat.groups.empty()) << toString(coll).str();

    Profile slow = handProfile(0.01, 200);
    OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(slow, pb));
    OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(slow, pb, "rank-major"));
    ASSERT_FALSE(plan.groups.empty()) << toString(coll).str();
    EXPECT_LT(plan.groups.size(), plan.tiles.size());
    EXPECT_EQ(sum(plan.groups), static_cast<int64_t>(plan.tiles.size()));
    EXPECT_EQ(plan.commUs.size(), plan.groups.size());
    // Every cut's ungrouped plan, one shift per unit, pays more latencies.
    for (int64_t k : {1, 2, 4, 8}) {
      std::vector<int64_t> cut(k, pb.m / 4 / k);
      OVERLAP_ASSIGN_OR_FAIL(ones, priceRankMajor(model, cut, "x"));
      EXPECT_LT(plan.predictedUs, ones.predictedUs)
          << toString(coll).str() << " k=" << k;
    }
    // auto sees the grouped plan.
    OVERLAP_ASSIGN_OR_FAIL(a, planTiles(slow, pb, "auto"));
    if (a.strategy == "rank-major")
      EXPECT_EQ(a.groups, plan.groups);
  }
}

/// Many small units: the groupings that would pass the work bound
/// (kMaxSearchSteps pipeline steps) are left out, and the plan says so.
TEST(RankMajor, GroupingSearchRespectsTheWorkBound) {
  Profile p = handProfile(0.01, 50);
  p.alignment = 1;
  MatmulProblem pb{
      Collective::ReduceScatter, 2 * 2048, 1024, 512, DType::F16, 2};
  OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(p, pb, "rank-major"));
  EXPECT_NE(plan.note.find("exchange groupings were not tried (the "
                           "planner's work bound of 67108864 pipeline "
                           "steps)"),
            std::string::npos)
      << plan.note;
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, pb));
  OVERLAP_ASSIGN_OR_FAIL(ones, priceRankMajor(model, plan.chunks, "x"));
  EXPECT_LE(plan.predictedUs, ones.predictedUs);
}

/// The strategy's choice is the least predicted of the cuts it tries: no
/// uniform cut of the block is better.
TEST(RankMajor, StrategyIsTheBestCut) {
  Profile p = handProfile(0.02);
  for (Collective coll : {Collective::ReduceScatter, Collective::AllGather}) {
    MatmulProblem pb{coll, 8 * 1024, 1024, 512, DType::F16, 4};
    OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, pb));
    OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(p, pb, "rank-major"));
    EXPECT_EQ(plan.strategy, "rank-major");
    EXPECT_EQ(sum(plan.chunks), pb.m / 4);
    EXPECT_EQ(sum(plan.tiles), pb.m);
    for (int64_t k : {1, 2, 4, 8, 16}) {
      std::vector<int64_t> cut(k, pb.m / 4 / k);
      OVERLAP_ASSIGN_OR_FAIL(other, priceRankMajor(model, cut, "x"));
      EXPECT_LE(plan.predictedUs, other.predictedUs * (1 + 1e-12))
          << toString(coll).str() << " k=" << k;
      OVERLAP_ASSIGN_OR_FAIL(same, evaluateRankMajor(p, pb, cut));
      EXPECT_EQ(same.predictedUs, other.predictedUs);
      EXPECT_EQ(same.strategy, "rank-major");
    }
  }
}

TEST(RankMajor, RefusedWhereItDoesNotApply) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  MatmulProblem ar{Collective::AllReduce, 8192, 8192, 3072, DType::BF16, 8};
  std::string e = errorOf(planTiles(p, ar, "rank-major"));
  EXPECT_NE(e.find("only reduce-scatter and all-gather"), std::string::npos)
      << e;
  MatmulProblem a2a = ar;
  a2a.collective = Collective::AllToAll;
  e = errorOf(planTiles(p, a2a, "rank-major"));
  EXPECT_NE(e.find("not all-to-all"), std::string::npos) << e;
  MatmulProblem one = ar;
  one.collective = Collective::ReduceScatter;
  one.ranks = 1;
  e = errorOf(planTiles(p, one, "rank-major"));
  EXPECT_NE(e.find("one rank"), std::string::npos) << e;
}

/// The measured H200 profile, with the datasheet's memory bandwidth (it
/// has none) so that reduce-scatter's sum can be priced.
Profile h200WithBandwidth() {
  llvm::Expected<Profile> p = loadProfile(shipped("h200-measured"));
  EXPECT_TRUE(bool(p));
  if (!p) {
    llvm::consumeError(p.takeError());
    return Profile();
  }
  p->device.memoryBandwidth = 4800e9;
  return std::move(*p);
}

// On the measured H200, an interleaved reduce-scatter tile is a batched GEMM
// of 8 matrices, which costs far more than one contiguous GEMM of its rows:
// rank-major wins, and auto picks it.
TEST(RankMajor, BeatsInterleavedWhereBatchingHurts) {
  Profile p = h200WithBandwidth();
  MatmulProblem pb{Collective::ReduceScatter, 4096, 4096, 16384,
                   DType::BF16, 8};
  OVERLAP_ASSIGN_OR_FAIL(rm, planTiles(p, pb, "rank-major"));
  OVERLAP_ASSIGN_OR_FAIL(opt, planTiles(p, pb, "optimal"));
  EXPECT_LT(rm.predictedUs, opt.predictedUs);
  OVERLAP_ASSIGN_OR_FAIL(a, planTiles(p, pb, "auto"));
  EXPECT_EQ(a.strategy, "rank-major");
  EXPECT_EQ(a.layout, TileOrder::RankMajor);
  EXPECT_EQ(a.predictedUs, rm.predictedUs);
  EXPECT_EQ(a.chunks, rm.chunks);
  bool listed = false;
  for (const Candidate &c : a.candidates)
    listed |= c.strategy == "rank-major" && c.ok;
  EXPECT_TRUE(listed);
}

// With two ranks the first block is half of M: reduce-scatter's first GEMM
// (or its chunks' latencies) and the final sum cost more than interleaved
// tiles save here.
TEST(RankMajor, LosesWhereTheBlockIsHalfOfM) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  MatmulProblem pb{Collective::ReduceScatter, 8192, 8192, 3072,
                   DType::BF16, 2};
  OVERLAP_ASSIGN_OR_FAIL(rm, planTiles(p, pb, "rank-major"));
  OVERLAP_ASSIGN_OR_FAIL(opt, planTiles(p, pb, "optimal"));
  EXPECT_GT(rm.predictedUs, opt.predictedUs);
  OVERLAP_ASSIGN_OR_FAIL(a, planTiles(p, pb, "auto"));
  EXPECT_NE(a.strategy, "rank-major");
  EXPECT_EQ(a.layout, TileOrder::Interleaved);
}

// auto keeps a split only when it beats serial by more than the margin.
TEST(RankMajor, AutoKeepsOneTileInsideTheMargin) {
  Profile p = handProfile(0.02);
  MatmulProblem pb{Collective::ReduceScatter, 8 * 1024, 1024, 512,
                   DType::F16, 4};
  // With no margin, the best split.
  p.predictionError[static_cast<int>(pb.collective)] = 0.0;
  OVERLAP_ASSIGN_OR_FAIL(split, planTiles(p, pb, "auto"));
  ASSERT_GT(split.tiles.size(), 1u);
  const double gain = (split.serialUs - split.predictedUs) / split.serialUs;
  ASSERT_GT(gain, 0.0);

  // A margin just above the gain: one tile, saying why.
  p.predictionError[static_cast<int>(pb.collective)] = gain + 0.001;
  OVERLAP_ASSIGN_OR_FAIL(one, planTiles(p, pb, "auto"));
  EXPECT_EQ(one.strategy, "none");
  EXPECT_EQ(one.selectedBy, "auto");
  EXPECT_EQ(one.tiles, (std::vector<int64_t>{pb.m}));
  EXPECT_EQ(one.predictedUs, one.serialUs);
  EXPECT_NE(one.note.find("auto keeps one tile: the best split (" +
                          split.strategy + ", " +
                          std::to_string(split.tiles.size()) + " tiles)"),
            std::string::npos)
      << one.note;
  EXPECT_NE(one.note.find("the profile's"), std::string::npos) << one.note;
  EXPECT_NE(one.note.find("prediction error for reduce-scatter"),
            std::string::npos)
      << one.note;
  EXPECT_FALSE(one.candidates.empty());

  // Just below: the split.
  p.predictionError[static_cast<int>(pb.collective)] = gain - 0.001;
  OVERLAP_ASSIGN_OR_FAIL(kept, planTiles(p, pb, "auto"));
  EXPECT_EQ(kept.tiles, split.tiles);
  EXPECT_TRUE(kept.note.empty()) << kept.note;

  // An explicit strategy is honoured whatever the margin.
  p.predictionError[static_cast<int>(pb.collective)] = 1.0;
  OVERLAP_ASSIGN_OR_FAIL(asked, planTiles(p, pb, split.strategy));
  EXPECT_GT(asked.tiles.size(), 1u);

  // No field: the default margin, 3 %.
  p.predictionError[static_cast<int>(pb.collective)].reset();
  EXPECT_EQ(p.getPredictionMargin(pb.collective), kDefaultPredictionMargin);
  EXPECT_EQ(kDefaultPredictionMargin, 0.03);
  OVERLAP_ASSIGN_OR_FAIL(dflt, planTiles(p, pb, "auto"));
  if (gain > 0.03) {
    EXPECT_EQ(dflt.tiles, split.tiles);
  } else {
    EXPECT_EQ(dflt.strategy, "none");
    EXPECT_NE(dflt.note.find("the default margin of 3.0 %"),
              std::string::npos)
        << dflt.note;
  }
}

// The default margin on a problem whose best split saves little: a GEMM
// that dwarfs its all-reduce.
TEST(RankMajor, DefaultMarginKeepsOneTile) {
  Profile p = linearCurvesProfile(1024, 512, 1.0, 1 << 20, 0, 1);
  MatmulProblem pb{Collective::AllReduce, 4096, 1024, 512, DType::F16, 8};
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, pb));
  OVERLAP_ASSIGN_OR_FAIL(opt, planTiles(p, pb, "optimal"));
  double gain = (model.serialUs() - opt.predictedUs) / model.serialUs();
  ASSERT_GT(gain, 0.0);
  ASSERT_LT(gain, 0.03);
  OVERLAP_ASSIGN_OR_FAIL(a, planTiles(p, pb, "auto"));
  EXPECT_EQ(a.strategy, "none");
  EXPECT_NE(a.note.find("the default margin of 3.0 % (the profile has no "
                        "prediction_error for all-reduce)"),
            std::string::npos)
      << a.note;
}

TEST(RankMajor, ProfilePredictionError) {
  auto text = [](const std::string &extra) {
    return R"({"gemm": {"curves": [{"n": 1024, "k": 512, "dtype": "f16",
                "curve": {"table": [[0, 0], [1024, 100]]}}]},
              "collectives": {"all-reduce": [{"ranks": 8, "x_unit": "MiB",
                "curve": {"table": [[0, 1], [1, 2]]}}]})" +
           extra + "}";
  };
  OVERLAP_ASSIGN_OR_FAIL(
      p, parseProfile(text(R"(, "prediction_error": {"all-reduce": 0.021,
          "reduce-scatter": 0.035, "note": "one H200 leg"})"),
                      "t.json"));
  EXPECT_EQ(p.getPredictionMargin(Collective::AllReduce), 0.021);
  EXPECT_EQ(p.getPredictionMargin(Collective::ReduceScatter), 0.035);
  EXPECT_EQ(p.getPredictionMargin(Collective::AllGather), 0.03);
  EXPECT_FALSE(p.predictionError[static_cast<int>(Collective::AllToAll)]);

  std::string e = errorOf(parseProfile(
      text(R"(, "prediction_error": {"all-reduc": 0.02})"), "t.json"));
  EXPECT_NE(e.find("prediction_error.all-reduc: expected no such field"),
            std::string::npos)
      << e;
  e = errorOf(parseProfile(
      text(R"(, "prediction_error": {"all-gather": 1.5})"), "t.json"));
  EXPECT_NE(e.find("prediction_error.all-gather: expected a mean |prediction "
                   "error| as a fraction in [0, 1], got 1.5"),
            std::string::npos)
      << e;
  e = errorOf(
      parseProfile(text(R"(, "prediction_error": 0.03)"), "t.json"));
  EXPECT_NE(e.find("prediction_error: expected an object"), std::string::npos)
      << e;
}

TEST(RankMajor, Json) {
  Profile p = handProfile(0.02);
  MatmulProblem rs{Collective::ReduceScatter, 4096, 1024, 512, DType::F16, 4};
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, rs));
  OVERLAP_ASSIGN_OR_FAIL(plan, priceRankMajor(model, {768, 256}, "rank-major"));
  llvm::json::Object doc = planToJSON(plan, rs, p, model);
  EXPECT_EQ(doc.getString("layout"), "rank-major");
  const llvm::json::Array *chunks = doc.getArray("chunks");
  ASSERT_TRUE(chunks);
  ASSERT_EQ(chunks->size(), 2u);
  EXPECT_EQ((*chunks)[0].getAsInteger(), 768);
  EXPECT_EQ((*chunks)[1].getAsInteger(), 256);
  EXPECT_EQ(doc.getArray("tiles")->size(), 8u);
  EXPECT_NEAR(*doc.getNumber("tail_us"), plan.tailUs, 1e-3);
  // Ungrouped: one unit per exchange group, listed anyway.
  const llvm::json::Array *groups = doc.getArray("groups");
  ASSERT_TRUE(groups);
  ASSERT_EQ(groups->size(), 8u);
  for (const llvm::json::Value &g : *groups)
    EXPECT_EQ(g.getAsInteger(), 1);
  const llvm::json::Array *tasks = doc.getArray("tasks");
  ASSERT_TRUE(tasks);
  // RS: steps 1, 1, 2, 2, 3, 3, 0, 0.
  const int64_t steps[] = {1, 1, 2, 2, 3, 3, 0, 0};
  for (size_t i = 0; i < 8; ++i) {
    const llvm::json::Object *t = (*tasks)[i].getAsObject();
    EXPECT_EQ(t->getInteger("step"), steps[i]) << i;
    EXPECT_EQ(t->getInteger("chunk"), int64_t(i % 2)) << i;
  }

  // Grouped {3, 1, 4}: one task per group, with its first unit's step and
  // chunk, its units and its rows.
  OVERLAP_ASSIGN_OR_FAIL(
      gp, priceRankMajor(model, {768, 256}, {3, 1, 4}, "rank-major"));
  llvm::json::Object gdoc = planToJSON(gp, rs, p, model);
  EXPECT_EQ(gdoc.getArray("tiles")->size(), 8u);
  const llvm::json::Array *gg = gdoc.getArray("groups");
  ASSERT_TRUE(gg);
  ASSERT_EQ(gg->size(), 3u);
  EXPECT_EQ((*gg)[2].getAsInteger(), 4);
  const llvm::json::Array *gt = gdoc.getArray("tasks");
  ASSERT_TRUE(gt);
  ASSERT_EQ(gt->size(), 3u);
  const int64_t gSteps[] = {1, 2, 3}, gChunks[] = {0, 1, 0},
                gFirst[] = {0, 3, 4}, gUnits[] = {3, 1, 4},
                gRows[] = {768 + 256 + 768, 256, 768 + 256 + 768 + 256};
  for (size_t i = 0; i < 3; ++i) {
    const llvm::json::Object *t = (*gt)[i].getAsObject();
    EXPECT_EQ(t->getInteger("step"), gSteps[i]) << i;
    EXPECT_EQ(t->getInteger("chunk"), gChunks[i]) << i;
    EXPECT_EQ(t->getInteger("first_unit"), gFirst[i]) << i;
    EXPECT_EQ(t->getInteger("units"), gUnits[i]) << i;
    EXPECT_EQ(t->getInteger("rows"), gRows[i]) << i;
    EXPECT_NEAR(*t->getNumber("comm_us"), gp.commUs[i], 1e-3) << i;
  }

  // Interleaved plans say so, with no chunks.
  OVERLAP_ASSIGN_OR_FAIL(u, planTiles(p, rs, "uniform:2"));
  llvm::json::Object udoc = planToJSON(u, rs, p, model);
  EXPECT_EQ(udoc.getString("layout"), "interleaved");
  EXPECT_EQ(udoc.get("chunks"), nullptr);
  EXPECT_EQ(udoc.get("groups"), nullptr);
  EXPECT_EQ(udoc.get("tail_us"), nullptr);
  EXPECT_EQ(toString(TileOrder::RankMajor), "rank-major");
  EXPECT_EQ(parseTileOrder("interleaved"), TileOrder::Interleaved);
  EXPECT_FALSE(parseTileOrder("rank_major").has_value());
}

} // namespace

//===- ChainPlannerTest.cpp - OP_Count order and fusion tests --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/ChainPlanner.h"

#include "TestHelpers.h"

#include "gtest/gtest.h"

#include <functional>
#include <limits>
#include <random>

using namespace overlap::planner;
using namespace overlap::planner::testing_helpers;

namespace {

/// Every parenthesization, by recursion over the last multiplication.
int64_t bruteForceMults(const std::vector<int64_t> &p, size_t i, size_t j) {
  if (i == j)
    return 0;
  int64_t best = std::numeric_limits<int64_t>::max();
  for (size_t k = i; k < j; ++k)
    best =
        std::min(best, bruteForceMults(p, i, k) + bruteForceMults(p, k + 1, j) +
                           p[i - 1] * p[k] * p[j]);
  return best;
}

ChainPlan mustPlan(std::vector<int64_t> dims, double mf) {
  llvm::Expected<ChainPlan> plan = planChain(dims, mf);
  if (!plan) {
    ADD_FAILURE() << llvm::toString(plan.takeError());
    return ChainPlan();
  }
  return std::move(*plan);
}

TEST(ChainPlanner, SeedThreeMatrixExample) {
  // 10x30, 30x5, 5x60: (A1 A2) A3 needs 4,500 multiplications, the other
  // order 27,000.
  ChainPlan plan = mustPlan({10, 30, 5, 60}, 4096);
  EXPECT_EQ(plan.order, "((A1 A2) A3)");
  EXPECT_EQ(plan.scalarMults, 4500);
}

TEST(ChainPlanner, CormenSixMatrixExample) {
  ChainPlan plan = mustPlan({30, 35, 15, 5, 10, 20, 25}, 1024);
  EXPECT_EQ(plan.order, "((A1 (A2 A3)) ((A4 A5) A6))");
  EXPECT_EQ(plan.scalarMults, 15125);
}

TEST(ChainPlanner, SingleMatrix) {
  ChainPlan plan = mustPlan({7, 9}, 64);
  EXPECT_EQ(plan.order, "A1");
  EXPECT_EQ(plan.scalarMults, 0);
  EXPECT_TRUE(plan.nodes.empty());
  EXPECT_EQ(plan.totalTransfers, 0);
}

TEST(ChainPlanner, MatchesBruteForceUpToEightMatrices) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> dim(1, 300);
  for (size_t n = 1; n <= 8; ++n) {
    for (int trial = 0; trial < 25; ++trial) {
      std::vector<int64_t> p(n + 1);
      for (int64_t &d : p)
        d = dim(rng);
      int64_t brute = bruteForceMults(p, 1, n);
      OVERLAP_ASSIGN_OR_FAIL(dp, minScalarMults(p));
      EXPECT_EQ(dp, brute) << "n = " << n;
      ChainPlan plan = mustPlan(p, 4096);
      EXPECT_EQ(plan.scalarMults, brute);
      // The reported tree really costs that much.
      int64_t treeCost = 0;
      for (const ChainNode &node : plan.nodes)
        treeCost += p[node.i - 1] * p[node.k] * p[node.j];
      EXPECT_EQ(treeCost, brute);
      EXPECT_EQ(plan.nodes.size(), n - 1);
    }
  }
}

TEST(ChainPlanner, TeeAcm2SeedExample) {
  // Seed 004's example: six matrices, Mf = 65,536.
  ChainPlan plan = mustPlan({936, 1008, 552, 368, 1016, 616, 544}, 65536);
  EXPECT_EQ(plan.order, "((A1 (A2 A3)) ((A4 A5) A6))");
  ASSERT_EQ(plan.nodes.size(), 5u);
  // Post-order, as the seed's table lists T1..T5.
  const std::pair<int64_t, int64_t> ij[] = {
      {2, 3}, {1, 3}, {4, 5}, {4, 6}, {1, 6}};
  for (size_t n = 0; n < 5; ++n) {
    EXPECT_EQ(plan.nodes[n].i, ij[n].first);
    EXPECT_EQ(plan.nodes[n].j, ij[n].second);
  }
  // No-fuse counts of T1, T2, T3 and T2's right fuse as in the seed table.
  EXPECT_EQ(plan.nodes[0].noFuse, 1599696);
  EXPECT_EQ(plan.nodes[1].noFuse, 4683168);
  ASSERT_TRUE(plan.nodes[1].rightFuse.has_value());
  EXPECT_EQ(*plan.nodes[1].rightFuse, 3072693);
  EXPECT_EQ(plan.nodes[1].decision, Fusion::Right);
  EXPECT_EQ(plan.nodes[2].noFuse, 1799336);
  // Fusion applicability follows the children.
  EXPECT_FALSE(plan.nodes[0].leftFuse.has_value());
  EXPECT_FALSE(plan.nodes[0].rightFuse.has_value());
  EXPECT_FALSE(plan.nodes[1].leftFuse.has_value());
  EXPECT_FALSE(plan.nodes[3].rightFuse.has_value());
  ASSERT_TRUE(plan.nodes[3].leftFuse.has_value());
  EXPECT_TRUE(plan.nodes[4].leftFuse && plan.nodes[4].rightFuse);
  // Values from the formulas, computed by hand (script in the
  // report): T4 left fuse with tile (220, 297); T5 stays unfused.
  EXPECT_EQ(plan.nodes[3].noFuse, 2989448);
  EXPECT_EQ(*plan.nodes[3].leftFuse, 2812937);
  EXPECT_EQ(plan.nodes[3].decision, Fusion::Left);
  EXPECT_EQ(plan.nodes[3].tileX, 220);
  EXPECT_EQ(plan.nodes[3].tileY, 297);
  EXPECT_EQ(plan.nodes[1].tileX, 311);
  EXPECT_EQ(plan.nodes[1].tileY, 210);
  EXPECT_EQ(plan.nodes[4].noFuse, 7894174);
  EXPECT_EQ(*plan.nodes[4].leftFuse, 8826176);
  EXPECT_EQ(*plan.nodes[4].rightFuse, 8906392);
  EXPECT_EQ(plan.nodes[4].decision, Fusion::None);
  EXPECT_EQ(plan.nodes[4].tileX, 256);
  EXPECT_EQ(plan.nodes[4].tileY, 256);
  EXPECT_EQ(plan.totalTransfers, 7894174);
}

TEST(ChainPlanner, FinalIsMinimumOfApplicableOptions) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> dim(64, 4096);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<int64_t> p(2 + trial % 7);
    for (int64_t &d : p)
      d = dim(rng);
    ChainPlan plan = mustPlan(p, 16384);
    for (const ChainNode &n : plan.nodes) {
      int64_t best = n.noFuse;
      if (n.leftFuse)
        best = std::min(best, *n.leftFuse);
      if (n.rightFuse)
        best = std::min(best, *n.rightFuse);
      EXPECT_EQ(n.finalTransfers, best);
      EXPECT_EQ(n.leftFuse.has_value(), n.k > n.i);
      EXPECT_EQ(n.rightFuse.has_value(), n.j > n.k + 1);
      switch (n.decision) {
      case Fusion::None:
        EXPECT_EQ(n.finalTransfers, n.noFuse);
        break;
      case Fusion::Left:
        EXPECT_EQ(n.finalTransfers, *n.leftFuse);
        break;
      case Fusion::Right:
        EXPECT_EQ(n.finalTransfers, *n.rightFuse);
        break;
      }
    }
    if (!plan.nodes.empty()) {
      EXPECT_EQ(plan.totalTransfers, plan.nodes.back().finalTransfers);
    }
  }
}

TEST(ChainPlanner, RejectsBadInput) {
  EXPECT_NE(errorOf(planChain({5}, 100)).find("--dims"), std::string::npos);
  EXPECT_NE(errorOf(planChain({5, 0, 3}, 100)).find("P1 is 0"),
            std::string::npos);
  EXPECT_NE(errorOf(planChain({5, 4, 3}, 0.5)).find("--fast-memory"),
            std::string::npos);
  EXPECT_NE(
      errorOf(planChain({int64_t(1) << 40, int64_t(1) << 40, int64_t(1) << 40},
                        1e6))
          .find("overflows"),
      std::string::npos);
}

} // namespace

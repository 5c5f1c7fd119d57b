//===- RankMajorBenchTest.cpp - Rank-major tiles in overlap-bench ---------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Where the bench's rank-major chunks sit, and the reduce-scatter's final
// sum that its GPU kernel must reproduce bit for bit: the ranks' order and
// one rounding, both of which change the result on chosen values.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/RankMajorBench.h"

#include "overlap/Calibration/RankProblem.h"
#include "overlap/Runtime/Numeric.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;

namespace {

TEST(RankMajorBench, SlotOfEachRanksPartial) {
  // Rank 1 of 4: its own partial in slot 0, rank 0's arrived on step 1,
  // rank 3's on step 2, rank 2's on step 3.
  EXPECT_EQ(rankMajorSlotOf(4, 1, 1), 0);
  EXPECT_EQ(rankMajorSlotOf(4, 1, 0), 1);
  EXPECT_EQ(rankMajorSlotOf(4, 1, 3), 2);
  EXPECT_EQ(rankMajorSlotOf(4, 1, 2), 3);
  // It is the step on which rank q sends to `me`: q's step s sends the
  // partial of block (q + s) mod G.
  auto l =
      planner::RankMajorLayout::create(Collective::ReduceScatter, 64, 4, {16});
  ASSERT_TRUE(bool(l)) << llvm::toString(l.takeError());
  for (int64_t me = 0; me < 4; ++me)
    for (int64_t q = 0; q < 4; ++q)
      for (size_t t = 0; t < l->size(); ++t)
        if (l->block(t, q) == me) {
          EXPECT_EQ((*l)[t].step, rankMajorSlotOf(4, me, q));
          if (l->exchanges(t)) {
            EXPECT_EQ(l->recvPeer(t, me), q);
          }
        }
}

TEST(RankMajorBench, StagingRows) {
  auto l = planner::RankMajorLayout::create(Collective::ReduceScatter, 96, 3,
                                            {8, 24});
  ASSERT_TRUE(bool(l)) << llvm::toString(l.takeError());
  ASSERT_EQ(l->size(), 6u);
  // Steps 1, 2, then 0; chunks 0, 1 in each.
  const int64_t want[] = {32, 40, 64, 72, 0, 8};
  for (size_t t = 0; t < 6; ++t)
    EXPECT_EQ(rankMajorStagingRow(*l, t), want[t]) << t;
}

/// The values as raw f16 or bf16 bytes.
std::vector<char> halves(bool bf16, std::initializer_list<float> values) {
  std::vector<char> bytes(2 * values.size());
  size_t at = 0;
  for (float v : values) {
    uint16_t bits = bf16 ? runtime::f32ToBf16(v) : runtime::f32ToF16(v);
    std::memcpy(&bytes[at], &bits, 2);
    at += 2;
  }
  return bytes;
}

TEST(RankMajorBench, SumRoundsOnce) {
  // 2048 + 1 + 1: f16 steps by 2 at 2048. Rounded once from f32 it is
  // 2050; rounded after every addition 2048 (2049 ties to even, twice).
  std::vector<char> staging = halves(false, {2048, 1, 1});
  std::vector<char> sum = rankOrderSum(OVERLAP_F16, staging.data(), 3, 0, 1);
  EXPECT_EQ(decodeElement(OVERLAP_F16, sum.data()), 2050.0f);
}

TEST(RankMajorBench, SumInTheRanksOrder) {
  // Rank 1 of 4, one f32 element per slot: slot 0 holds its own partial
  // (rank 1), slot 1 rank 0's, slot 2 rank 3's, slot 3 rank 2's. A 1 added
  // to 1e8 is lost (f32 steps by 8 there), so the order decides.
  float byRank[4] = {1.0f, 1e8f, 1.0f, -1e8f};
  float bySlot[4];
  for (int64_t q = 0; q < 4; ++q)
    bySlot[rankMajorSlotOf(4, 1, q)] = byRank[q];
  std::vector<char> staging(sizeof(bySlot));
  std::memcpy(staging.data(), bySlot, sizeof(bySlot));
  std::vector<char> sum = rankOrderSum(OVERLAP_F32, staging.data(), 4, 1, 1);
  float got;
  std::memcpy(&got, sum.data(), sizeof(got));
  // Rank order: ((1 + 1e8) + 1) - 1e8 = 0 (each 1 is lost against 1e8).
  EXPECT_EQ(got, 0.0f);
  // Slot order would be ((1e8 + 1) - 1e8) + 1 = 1.
  float slotOrder = 0.0f;
  for (float v : bySlot)
    slotOrder += v;
  EXPECT_EQ(slotOrder, 1.0f);
}

TEST(RankMajorBench, SumOfManyElementsAndBf16) {
  // Two elements per slot, two ranks, bf16: element e of the result is
  // slot 0's plus slot 1's, rounded once.
  std::vector<char> staging = halves(true, {1.0f, 3.0f, 0.5f, -1.0f});
  std::vector<char> sum = rankOrderSum(OVERLAP_BF16, staging.data(), 2, 0, 2);
  ASSERT_EQ(sum.size(), 4u);
  EXPECT_EQ(decodeElement(OVERLAP_BF16, sum.data()), 1.5f);
  EXPECT_EQ(decodeElement(OVERLAP_BF16, sum.data() + 2), 2.0f);
}

} // namespace

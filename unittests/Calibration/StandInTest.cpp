//===- StandInTest.cpp - The legs that stand in for a network ------------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The host side of the one-GPU legs: --leg names, the bytes a stand-in moves
// per tile (the same for copy-engine and sm-copy: the ring's wire bytes and
// the rank's own slice), the sm-copy kernel's CTAs from the SM budget, its
// access width and its grid.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/StandIn.h"

#include "overlap/Planner/Ring.h"

#include "gtest/gtest.h"

using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;

namespace {

TEST(StandIn, LegNames) {
  for (Leg leg : {Leg::CopyEngine, Leg::SmCopy, Leg::Nccl})
    EXPECT_EQ(parseLeg(legName(leg)), leg) << legName(leg);
  EXPECT_EQ(parseLeg("sm-copy"), Leg::SmCopy);
  EXPECT_FALSE(parseLeg("sm"));
  EXPECT_FALSE(parseLeg("copy_engine"));
  EXPECT_FALSE(parseLeg(""));
  EXPECT_EQ(badLegMessage("sm"),
            "--leg: expected copy-engine, sm-copy or nccl, got 'sm'");
}

TEST(StandIn, BytesPerTile) {
  const size_t mib = size_t(1) << 20;
  // All-reduce over 8: 2 x 7/8 of the tile, the tile itself first, the
  // surplus from scratch; nothing stays local.
  StandInBytes ar = standInBytes(Collective::AllReduce, 8, 8 * mib);
  EXPECT_EQ(ar.wire, 14 * mib);
  EXPECT_EQ(ar.fromTile, 8 * mib);
  EXPECT_EQ(ar.local, 0u);
  // Over 2 ranks the ring moves exactly the tile.
  StandInBytes ar2 = standInBytes(Collective::AllReduce, 2, 4096);
  EXPECT_EQ(ar2.wire, 4096u);
  EXPECT_EQ(ar2.fromTile, 4096u);
  // Reduce-scatter: the other ranks' slices, all from the tile.
  StandInBytes rs = standInBytes(Collective::ReduceScatter, 8, 8 * mib);
  EXPECT_EQ(rs.wire, 7 * mib);
  EXPECT_EQ(rs.fromTile, 7 * mib);
  EXPECT_EQ(rs.local, 0u);
  // All-gather and all-to-all: the other slots over the wire, this rank's
  // own slot copied locally.
  for (Collective c : {Collective::AllGather, Collective::AllToAll}) {
    StandInBytes b = standInBytes(c, 4, 4096);
    EXPECT_EQ(b.wire, 3072u);
    EXPECT_EQ(b.fromTile, 3072u);
    EXPECT_EQ(b.local, 1024u);
    EXPECT_EQ(b.total(), 4096u);
  }
  // Always the ring's wire bytes, whatever the group.
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather, Collective::AllToAll})
    for (int64_t g : {2, 3, 4, 6, 8, 16}) {
      const size_t tile = size_t(g) * 6144;
      StandInBytes b = standInBytes(c, g, tile);
      EXPECT_EQ(b.wire, size_t(planner::ringWireBytes(c, g, int64_t(tile))))
          << planner::toString(c).str() << " over " << g;
      EXPECT_LE(b.fromTile, tile);
      EXPECT_LE(b.fromTile, b.wire);
    }
}

TEST(StandIn, CtasFollowTheBudget) {
  EXPECT_EQ(smCopyCtas(16, 132), 16); // the budget NCCL's maxCTAs gets
  EXPECT_EQ(smCopyCtas(8, 114), 8);
  EXPECT_EQ(smCopyCtas(0, 132), 132);   // no reservation: every SM
  EXPECT_EQ(smCopyCtas(200, 132), 132); // never more than the device has
  EXPECT_EQ(smCopyCtas(16, 0), 16);     // SM count unknown
  EXPECT_EQ(smCopyCtas(0, 0), 1);
}

TEST(StandIn, WordAndGrid) {
  EXPECT_EQ(copyWordBytes(0x1000, 0x2000, 4096), 16u);
  EXPECT_EQ(copyWordBytes(0x1008, 0x2000, 4096), 8u);
  EXPECT_EQ(copyWordBytes(0x1000, 0x2004, 4096), 4u);
  EXPECT_EQ(copyWordBytes(0x1000, 0x2000, 4098), 2u);
  EXPECT_EQ(copyWordBytes(0x1001, 0x2000, 4096), 1u);
  EXPECT_EQ(smCopyBlocks(16, 0, 16), 0);
  EXPECT_EQ(smCopyBlocks(16, 16, 16), 1);
  // Three blocks' worth of words: three blocks, not the budget.
  EXPECT_EQ(smCopyBlocks(16, 3 * kSmCopyThreads * 16, 16), 3);
  EXPECT_EQ(smCopyBlocks(16, 3 * kSmCopyThreads * 16 + 16, 16), 4);
  // Plenty of words: the budget, never more.
  EXPECT_EQ(smCopyBlocks(16, size_t(1) << 30, 16), 16);
  EXPECT_EQ(smCopyBlocks(132, size_t(1) << 30, 1), 132);
}

} // namespace

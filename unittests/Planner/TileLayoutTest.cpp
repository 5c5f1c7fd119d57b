//===- TileLayoutTest.cpp - The tile layout, ring bytes, uniform tiles ----===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The one tile-layout rule (overlap-decompose builds its IR from it,
// overlap-bench runs it on a GPU), the ring factor's integer bytes and the
// per-collective uniform tiles.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/TileLayout.h"
#include "overlap/Planner/Ring.h"
#include "overlap/Planner/TilePlanner.h"

#include "TestHelpers.h"

#include "gtest/gtest.h"

#include <cmath>
#include <numeric>
#include <random>
#include <set>

using namespace overlap::planner;
using namespace overlap::planner::testing_helpers;

namespace {

TEST(TileLayout, AllReduceTilesAreRowRanges) {
  OVERLAP_ASSIGN_OR_FAIL(
      l, TileLayout::create(Collective::AllReduce, 8, 4, {3, 5}));
  EXPECT_EQ(l.slots(), 1);
  EXPECT_EQ(l.blockSize(), 8);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[1].offset, 3);
  EXPECT_EQ(l[1].blockOffset, 3);
  EXPECT_EQ(l[1].blockRows, 5);
  EXPECT_EQ(l.gemmBatch(0), 1);
  EXPECT_EQ(l.globalRow(1, 0, 2), 5);
  EXPECT_EQ(l.packedRow(1, 0, 2), 5);
}

// The example of docs/architecture.md's convention: tile i takes
// tiles[i] / G rows at offset off_i / G of every rank's block.
TEST(TileLayout, ReduceScatterTilesTakeRowsOfEveryBlock) {
  OVERLAP_ASSIGN_OR_FAIL(
      l, TileLayout::create(Collective::ReduceScatter, 16, 4, {8, 4, 4}));
  EXPECT_EQ(l.slots(), 4);
  EXPECT_EQ(l.blockSize(), 4);
  EXPECT_EQ(l[0].blockOffset, 0);
  EXPECT_EQ(l[0].blockRows, 2);
  EXPECT_EQ(l[1].offset, 8);
  EXPECT_EQ(l[1].blockOffset, 2);
  EXPECT_EQ(l[2].blockOffset, 3);
  EXPECT_EQ(l.gemmBatch(0), 4);
  EXPECT_FALSE(l.isWhole(0));
  // Tile 0, block 1, its second row: row 4 + 0 + 1 of C; packed after the
  // two rows of block 0.
  EXPECT_EQ(l.globalRow(0, 1, 1), 5);
  EXPECT_EQ(l.packedRow(0, 1, 1), 3);
  EXPECT_EQ(l.globalRow(1, 3, 0), 14);
  EXPECT_EQ(l.packedRow(1, 3, 0), 11);
}

TEST(TileLayout, OneTileIsTheUnsplitProblem) {
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather}) {
    OVERLAP_ASSIGN_OR_FAIL(l, TileLayout::create(c, 24, 8, {24}));
    EXPECT_TRUE(l.isWhole(0));
    EXPECT_EQ(l.gemmBatch(0), 1);
    for (int64_t row = 0; row < 24; ++row) {
      TileLayout::Location at = l.locate(row);
      EXPECT_EQ(l.packedRow(at.tile, at.slot, at.row), row);
    }
  }
}

TEST(TileLayout, RejectsWhatTheCompilerRejects) {
  std::string why =
      errorOf(TileLayout::create(Collective::ReduceScatter, 16, 4, {6, 10}));
  EXPECT_NE(why.find("multiple of the group"), std::string::npos) << why;
  why = errorOf(TileLayout::create(Collective::AllGather, 18, 4, {18}));
  EXPECT_NE(why.find("M (18)"), std::string::npos) << why;
  why = errorOf(TileLayout::create(Collective::AllReduce, 8, 2, {3, 4}));
  EXPECT_NE(why.find("sum to 7"), std::string::npos) << why;
  EXPECT_EQ(codeOf(TileLayout::create(Collective::AllReduce, 8, 2, {8, 0})),
            std::errc::invalid_argument);
  EXPECT_FALSE(
      errorOf(TileLayout::create(Collective::AllReduce, 8, 2, {})).empty());
  // All-reduce tiles need not divide by the group.
  EXPECT_TRUE(bool(TileLayout::create(Collective::AllReduce, 9, 4, {5, 4})));
}

// Random layouts: every row of the full product is in exactly one tile
// slice and one packed row, and locate inverts globalRow.
TEST(TileLayout, RowsMapOneToOne) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    Collective c = Collective(rng() % 4);
    int64_t group = 1 + int64_t(rng() % 8);
    int64_t slots = layoutSlots(c, group);
    int64_t block = 1 + int64_t(rng() % 20), m = block * slots;
    std::vector<int64_t> tiles;
    for (int64_t left = block; left > 0;) {
      int64_t take = 1 + int64_t(rng() % uint64_t(left));
      tiles.push_back(take * slots);
      left -= take;
    }
    OVERLAP_ASSIGN_OR_FAIL(l, TileLayout::create(c, m, group, tiles));
    std::set<int64_t> global, packed;
    for (size_t t = 0; t < l.size(); ++t)
      for (int64_t slot = 0; slot < l.slots(); ++slot)
        for (int64_t row = 0; row < l[t].blockRows; ++row) {
          int64_t g = l.globalRow(t, slot, row);
          global.insert(g);
          packed.insert(l.packedRow(t, slot, row));
          TileLayout::Location at = l.locate(g);
          EXPECT_EQ(at.tile, t);
          EXPECT_EQ(at.slot, slot);
          EXPECT_EQ(at.row, row);
          // The compiler's convention: row slot * M/G + off_t/G + row.
          EXPECT_EQ(g, slot * (m / slots) + l[t].offset / slots + row);
        }
    EXPECT_EQ(int64_t(global.size()), m);
    EXPECT_EQ(int64_t(packed.size()), m);
    EXPECT_EQ(*global.rbegin(), m - 1);
    EXPECT_EQ(*packed.rbegin(), m - 1);
  }
}

TEST(TileLayout, ArrangeRowsGathersSlices) {
  OVERLAP_ASSIGN_OR_FAIL(
      l, TileLayout::create(Collective::AllGather, 8, 2, {4, 4}));
  const char src[] = {0, 1, 2, 3, 4, 5, 6, 7};
  char dst[8] = {};
  arrangeRows(l, src, 1, dst);
  EXPECT_EQ(std::vector<char>(dst, dst + 8),
            (std::vector<char>{0, 1, 4, 5, 2, 3, 6, 7}));
}

TEST(Ring, WireBytes) {
  EXPECT_EQ(ringWireBytes(Collective::AllReduce, 8, 1024), 1792);
  EXPECT_EQ(ringWireBytes(Collective::ReduceScatter, 8, 1024), 896);
  EXPECT_EQ(ringWireBytes(Collective::AllGather, 8, 1024), 896);
  EXPECT_EQ(ringWireBytes(Collective::AllReduce, 1, 1024), 0);
  EXPECT_EQ(ringWireBytes(Collective::AllGather, 1, 1024), 0);
  EXPECT_EQ(ringWireBytes(Collective::AllReduce, 3, 1), 1); // 4/3
  EXPECT_EQ(ringWireBytes(Collective::AllReduce, 3, 2), 3); // 8/3
  EXPECT_EQ(ringWireBytes(Collective::AllReduce, 4, 1), 2); // 1.5: halves up
  // The Planner's ring factor, in integers.
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 1000; ++trial) {
    Collective c = Collective(rng() % 3);
    int64_t g = 1 + int64_t(rng() % 16);
    int64_t bytes = int64_t(rng() % (int64_t(1) << 32)) * g;
    double want = ringFactor(c, g) * double(bytes);
    EXPECT_LE(std::abs(double(ringWireBytes(c, g, bytes)) - want), 0.5)
        << toString(c).str() << " G=" << g << " bytes=" << bytes;
  }
}

// Exact where doubles are not: against 128-bit arithmetic, for sizes whose
// 2(G-1) x bytes overflows 64 bits.
TEST(Ring, WireBytesAreExactForLargeBuffers) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 1000; ++trial) {
    Collective c = Collective(rng() % 3);
    int64_t g = 2 + int64_t(rng() % 1000);
    int64_t bytes = int64_t(rng() >> 3); // < 2^61
    RingShare s = ringShare(c, g);
    __int128 want =
        (__int128(bytes) * s.numerator + s.denominator / 2) / s.denominator;
    EXPECT_EQ(__int128(ringWireBytes(c, g, bytes)), want)
        << toString(c).str() << " G=" << g << " bytes=" << bytes;
  }
}

// ringFactor is the share's value: one rule for both.
TEST(Ring, FactorIsTheShare) {
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather, Collective::AllToAll})
    for (int64_t g = 0; g <= 64; ++g) {
      RingShare s = ringShare(c, g);
      EXPECT_EQ(ringFactor(c, g), s.value());
      double r = double(g);
      double expected = g <= 1                       ? 0.0
                        : c == Collective::AllReduce ? 2.0 * (r - 1.0) / r
                                                     : (r - 1.0) / r;
      EXPECT_DOUBLE_EQ(s.value(), expected) << toString(c).str() << " " << g;
    }
}

TEST(TileLayout, UniformTiles) {
  auto tiles = [](Collective c, int64_t m, int64_t g, int64_t n) {
    auto t = uniformTiles(c, m, g, n);
    if (!t) {
      llvm::consumeError(t.takeError());
      return std::vector<int64_t>{};
    }
    return *t;
  };
  EXPECT_EQ(tiles(Collective::AllReduce, 10, 8, 4),
            (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(tiles(Collective::ReduceScatter, 16, 4, 3),
            (std::vector<int64_t>{8, 4, 4}));
  EXPECT_EQ(tiles(Collective::AllGather, 8, 4, 5),
            (std::vector<int64_t>{4, 4}));
  std::string why = errorOf(uniformTiles(Collective::AllGather, 10, 4, 2));
  EXPECT_NE(why.find("M (10)"), std::string::npos) << why;
  EXPECT_FALSE(errorOf(uniformTiles(Collective::AllReduce, 8, 4, 0)).empty());
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather})
    for (int64_t count : {1, 2, 3, 4, 7}) {
      std::vector<int64_t> t = tiles(c, 8192, 8, count);
      EXPECT_TRUE(bool(TileLayout::create(c, 8192, 8, t)));
      EXPECT_EQ(int64_t(t.size()), count);
      EXPECT_EQ(std::accumulate(t.begin(), t.end(), int64_t(0)), 8192);
      // The same rule as the Planner's uniform:n on the group's grid.
      auto planned = uniformTiles(int64_t(8192), count, layoutSlots(c, 8));
      ASSERT_TRUE(bool(planned));
      EXPECT_EQ(t, *planned);
    }
}

} // namespace

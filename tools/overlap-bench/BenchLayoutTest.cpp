//===- BenchLayoutTest.cpp - overlap-bench's tiles and arguments ----------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The parts of overlap-bench that decide what the GPU is asked to do: the
// tile layout (it must be the compiler's decomposition), the wire bytes of
// the copy-engine stand-in, uniform tiles, argument lists, and the pack
// benchmark's blocks and host reference. No GPU needed.
//
//===----------------------------------------------------------------------===//

#include "BenchLayout.h"

#include "gtest/gtest.h"

#include <numeric>
#include <random>
#include <set>

using namespace overlap;
using namespace overlap::bench;
using planner::Collective;

namespace {

TEST(BenchArgs, GemmShapes) {
  auto shapes = parseGemmShapes("4096x8192x3072,1x2x3");
  ASSERT_TRUE(shapes);
  ASSERT_EQ(shapes->size(), 2u);
  EXPECT_EQ((*shapes)[0].m, 4096);
  EXPECT_EQ((*shapes)[0].n, 8192);
  EXPECT_EQ((*shapes)[0].k, 3072);
  EXPECT_EQ((*shapes)[1].k, 3);
  for (const char *bad :
       {"", "1x2", "1x2x3x", "1x2x3junk", "0x2x3", "-1x2x3", "1x2x3,", ",1x2x3",
        "1 x2x3", "1x2x3,,4x5x6", "99999999999999999999x1x1"})
    EXPECT_FALSE(parseGemmShapes(bad)) << bad;
}

TEST(BenchArgs, Collectives) {
  auto one = parseCollectives("reduce-scatter");
  ASSERT_TRUE(one);
  EXPECT_EQ(*one, std::vector<Collective>{Collective::ReduceScatter});
  auto all = parseCollectives("all-gather,all-reduce,reduce-scatter");
  ASSERT_TRUE(all);
  EXPECT_EQ(*all, (std::vector<Collective>{Collective::AllGather,
                                           Collective::AllReduce,
                                           Collective::ReduceScatter}));
  for (const char *bad : {"", "all-reduce,all-reduce", "allreduce",
                          "all-reduce,", "all-reduce, all-gather"})
    EXPECT_FALSE(parseCollectives(bad)) << bad;
}

TEST(BenchLayout, AllReduceTilesAreRowRanges) {
  std::string why;
  auto l = TileLayout::create(Collective::AllReduce, 8, 4, {3, 5}, why);
  ASSERT_TRUE(l) << why;
  EXPECT_EQ(l->slots(), 1);
  EXPECT_EQ(l->blockSize(), 8);
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[1].offset, 3);
  EXPECT_EQ((*l)[1].blockOffset, 3);
  EXPECT_EQ((*l)[1].blockRows, 5);
  EXPECT_EQ(l->gemmBatch(0), 1);
  EXPECT_EQ(l->globalRow(1, 0, 2), 5);
  EXPECT_EQ(l->packedRow(1, 0, 2), 5);
}

// The example of docs/architecture.md's convention: tile i takes
// tiles[i] / G rows at offset off_i / G of every rank's block.
TEST(BenchLayout, ReduceScatterTilesTakeRowsOfEveryBlock) {
  std::string why;
  auto l = TileLayout::create(Collective::ReduceScatter, 16, 4, {8, 4, 4}, why);
  ASSERT_TRUE(l) << why;
  EXPECT_EQ(l->slots(), 4);
  EXPECT_EQ(l->blockSize(), 4);
  EXPECT_EQ((*l)[0].blockOffset, 0);
  EXPECT_EQ((*l)[0].blockRows, 2);
  EXPECT_EQ((*l)[1].offset, 8);
  EXPECT_EQ((*l)[1].blockOffset, 2);
  EXPECT_EQ((*l)[2].blockOffset, 3);
  EXPECT_EQ(l->gemmBatch(0), 4);
  EXPECT_FALSE(l->isWhole(0));
  // Tile 0, block 1, its second row: row 4 + 0 + 1 of C; packed after the
  // two rows of block 0.
  EXPECT_EQ(l->globalRow(0, 1, 1), 5);
  EXPECT_EQ(l->packedRow(0, 1, 1), 3);
  EXPECT_EQ(l->globalRow(1, 3, 0), 14);
  EXPECT_EQ(l->packedRow(1, 3, 0), 11);
}

TEST(BenchLayout, OneTileIsTheUnsplitProblem) {
  std::string why;
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather}) {
    auto l = TileLayout::create(c, 24, 8, {24}, why);
    ASSERT_TRUE(l) << why;
    EXPECT_TRUE(l->isWhole(0));
    EXPECT_EQ(l->gemmBatch(0), 1);
    for (int64_t row = 0; row < 24; ++row) {
      TileLayout::Location at = l->locate(row);
      EXPECT_EQ(l->packedRow(at.tile, at.slot, at.row), row);
    }
  }
}

TEST(BenchLayout, RejectsWhatTheCompilerRejects) {
  std::string why;
  EXPECT_FALSE(
      TileLayout::create(Collective::ReduceScatter, 16, 4, {6, 10}, why));
  EXPECT_NE(why.find("multiple of the group"), std::string::npos) << why;
  EXPECT_FALSE(TileLayout::create(Collective::AllGather, 18, 4, {18}, why));
  EXPECT_NE(why.find("M (18)"), std::string::npos) << why;
  EXPECT_FALSE(TileLayout::create(Collective::AllReduce, 8, 2, {3, 4}, why));
  EXPECT_NE(why.find("sum to 7"), std::string::npos) << why;
  EXPECT_FALSE(TileLayout::create(Collective::AllReduce, 8, 2, {8, 0}, why));
  EXPECT_FALSE(TileLayout::create(Collective::AllReduce, 8, 2, {}, why));
  // All-reduce tiles need not divide by the group.
  EXPECT_TRUE(TileLayout::create(Collective::AllReduce, 9, 4, {5, 4}, why));
}

// Random layouts: every row of the full product is in exactly one tile
// slice and one packed row, and locate inverts globalRow.
TEST(BenchLayout, RowsMapOneToOne) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    Collective c = Collective(rng() % 3);
    int64_t group = 1 + int64_t(rng() % 8);
    int64_t slots = c == Collective::AllReduce ? 1 : group;
    int64_t block = 1 + int64_t(rng() % 20), m = block * slots;
    std::vector<int64_t> tiles;
    for (int64_t left = block; left > 0;) {
      int64_t take = 1 + int64_t(rng() % uint64_t(left));
      tiles.push_back(take * slots);
      left -= take;
    }
    std::string why;
    auto l = TileLayout::create(c, m, group, tiles, why);
    ASSERT_TRUE(l) << why;
    std::set<int64_t> global, packed;
    for (size_t t = 0; t < l->size(); ++t)
      for (int64_t slot = 0; slot < l->slots(); ++slot)
        for (int64_t row = 0; row < (*l)[t].blockRows; ++row) {
          int64_t g = l->globalRow(t, slot, row);
          global.insert(g);
          packed.insert(l->packedRow(t, slot, row));
          TileLayout::Location at = l->locate(g);
          EXPECT_EQ(at.tile, t);
          EXPECT_EQ(at.slot, slot);
          EXPECT_EQ(at.row, row);
          // The compiler's convention: row slot * M/G + off_t/G + row.
          EXPECT_EQ(g, slot * (m / slots) + (*l)[t].offset / slots + row);
        }
    EXPECT_EQ(int64_t(global.size()), m);
    EXPECT_EQ(int64_t(packed.size()), m);
    EXPECT_EQ(*global.rbegin(), m - 1);
    EXPECT_EQ(*packed.rbegin(), m - 1);
  }
}

TEST(BenchLayout, ArrangeRowsGathersSlices) {
  std::string why;
  auto l = TileLayout::create(Collective::AllGather, 8, 2, {4, 4}, why);
  ASSERT_TRUE(l) << why;
  const char src[] = {0, 1, 2, 3, 4, 5, 6, 7};
  char dst[8] = {};
  arrangeRows(*l, src, 1, dst);
  EXPECT_EQ(std::vector<char>(dst, dst + 8),
            (std::vector<char>{0, 1, 4, 5, 2, 3, 6, 7}));
}

TEST(BenchWire, RingBytes) {
  EXPECT_EQ(ringWireBytes(Collective::AllReduce, 8, 1024), 1792);
  EXPECT_EQ(ringWireBytes(Collective::ReduceScatter, 8, 1024), 896);
  EXPECT_EQ(ringWireBytes(Collective::AllGather, 8, 1024), 896);
  EXPECT_EQ(ringWireBytes(Collective::AllReduce, 1, 1024), 0);
  EXPECT_EQ(ringWireBytes(Collective::AllGather, 1, 1024), 0);
  EXPECT_EQ(ringWireBytes(Collective::AllReduce, 3, 1), 1); // 4/3
  EXPECT_EQ(ringWireBytes(Collective::AllReduce, 3, 2), 3); // 8/3
  // The Planner's ring factor, in integers.
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 1000; ++trial) {
    Collective c = Collective(rng() % 3);
    int64_t g = 1 + int64_t(rng() % 16);
    int64_t bytes = int64_t(rng() % (int64_t(1) << 32)) * g;
    double want = planner::ringFactor(c, g) * double(bytes);
    EXPECT_LE(std::abs(double(ringWireBytes(c, g, bytes)) - want), 0.5)
        << planner::toString(c).str() << " G=" << g << " bytes=" << bytes;
  }
}

TEST(BenchLayout, UniformTiles) {
  EXPECT_EQ(uniformTiles(Collective::AllReduce, 10, 8, 4),
            (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(uniformTiles(Collective::ReduceScatter, 16, 4, 3),
            (std::vector<int64_t>{8, 4, 4}));
  EXPECT_EQ(uniformTiles(Collective::AllGather, 8, 4, 5),
            (std::vector<int64_t>{4, 4}));
  EXPECT_TRUE(uniformTiles(Collective::AllGather, 10, 4, 2).empty());
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather})
    for (int64_t count : {1, 2, 3, 4, 7}) {
      std::vector<int64_t> tiles = uniformTiles(c, 8192, 8, count);
      std::string why;
      EXPECT_TRUE(TileLayout::create(c, 8192, 8, tiles, why)) << why;
      EXPECT_EQ(int64_t(tiles.size()), count);
      EXPECT_EQ(std::accumulate(tiles.begin(), tiles.end(), int64_t(0)), 8192);
    }
}

TEST(BenchPack, ParseBlocks) {
  std::string why;
  auto blocks = parsePackBlocks("16384,100x3@7:1,4096x8@8:8", 64 << 20, why);
  ASSERT_TRUE(blocks) << why;
  ASSERT_EQ(blocks->size(), 3u);
  EXPECT_EQ((*blocks)[0].rows, 4096);
  EXPECT_EQ((*blocks)[0].strideBytes, 32768);
  EXPECT_EQ((*blocks)[0].elemBytes, 4);
  EXPECT_EQ((*blocks)[0].bytes(), int64_t(64) << 20);
  EXPECT_EQ((*blocks)[1].rows, 100);
  EXPECT_EQ((*blocks)[1].rowBytes, 3);
  EXPECT_EQ((*blocks)[1].strideBytes, 7);
  EXPECT_EQ((*blocks)[1].footprint(), 99 * 7 + 3);
  EXPECT_EQ((*blocks)[2].elemBytes, 8);
  for (const char *bad : {"", "x8", "8@", "8:", "8,,16", "6:4", "8@4", "8@12:8",
                          "0", "8@8:0", "2x", "8 @16"}) {
    EXPECT_FALSE(parsePackBlocks(bad, 1 << 20, why)) << bad;
    EXPECT_FALSE(why.empty());
  }
}

TEST(BenchPack, DefaultBlocks) {
  const int64_t total = int64_t(64) << 20;
  std::vector<PackBlock> blocks = defaultPackBlocks(total);
  std::set<int64_t> elems, rowsBytes, access;
  for (const PackBlock &b : blocks) {
    std::string why;
    EXPECT_TRUE(validPackBlock(b, why)) << why;
    EXPECT_GT(b.strideBytes, b.rowBytes);
    EXPECT_LE(b.bytes(), total);
    EXPECT_GT(b.bytes(), total - b.rowBytes);
    elems.insert(b.elemBytes);
    rowsBytes.insert(b.rowBytes);
    access.insert(packAccessBytes(b));
  }
  EXPECT_TRUE(rowsBytes.count(2) && rowsBytes.count(16384));
  EXPECT_GE(elems.size(), 4u);
  // Every access width of the kernel is exercised.
  EXPECT_EQ(access, (std::set<int64_t>{1, 2, 4, 8, 16}));
}

TEST(BenchPack, AccessWidth) {
  EXPECT_EQ(packAccessBytes({4096, 16384, 32768, 2}), 16);
  EXPECT_EQ(packAccessBytes({4096, 1000, 2000, 4}), 8);
  EXPECT_EQ(packAccessBytes({4096, 16384, 16386, 2}), 2);
  EXPECT_EQ(packAccessBytes({4096, 3, 6, 1}), 1);
  EXPECT_EQ(packAccessBytes({4096, 4096, 4097, 1}), 1);
  // One row: the stride does not matter.
  EXPECT_EQ(packAccessBytes({1, 16, 17, 1}), 16);
}

TEST(BenchPack, HostPackAndUnpackRoundTrip) {
  PackBlock b{37, 12, 20, 4};
  std::vector<char> strided(size_t(b.footprint())), packed(size_t(b.bytes()));
  std::mt19937 rng(11);
  for (char &c : strided)
    c = char(rng());
  hostPack(b, strided.data(), packed.data());
  EXPECT_EQ(std::vector<char>(packed.begin() + 12, packed.begin() + 24),
            std::vector<char>(strided.begin() + 20, strided.begin() + 32));
  std::vector<char> back(strided.size(), char(0x5a));
  hostUnpack(b, packed.data(), back.data());
  for (size_t i = 0; i < back.size(); ++i) {
    bool inRow = i % size_t(b.strideBytes) < size_t(b.rowBytes);
    EXPECT_EQ(back[i], inRow ? strided[i] : char(0x5a)) << i;
  }
}

} // namespace

//===- PackBlocksTest.cpp - The pack benchmark's blocks -------------------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/PackBlocks.h"

#include "gtest/gtest.h"

#include <random>
#include <set>

using namespace overlap::calibration;

namespace {

TEST(PackBlocks, ParseBlocks) {
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

TEST(PackBlocks, DefaultBlocks) {
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

TEST(PackBlocks, AccessWidth) {
  EXPECT_EQ(packAccessBytes({4096, 16384, 32768, 2}), 16);
  EXPECT_EQ(packAccessBytes({4096, 1000, 2000, 4}), 8);
  EXPECT_EQ(packAccessBytes({4096, 16384, 16386, 2}), 2);
  EXPECT_EQ(packAccessBytes({4096, 3, 6, 1}), 1);
  EXPECT_EQ(packAccessBytes({4096, 4096, 4097, 1}), 1);
  // One row: the stride does not matter.
  EXPECT_EQ(packAccessBytes({1, 16, 17, 1}), 16);
}

TEST(PackBlocks, HostPackAndUnpackRoundTrip) {
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

TEST(PackBlocks, Bandwidth) {
  // 1 MB in 1 us: 1000 GB/s; each byte counted once.
  EXPECT_DOUBLE_EQ(packGbps({1000, 1000, 2000, 4}, 1.0), 1000.0);
  EXPECT_DOUBLE_EQ(packGbps({1, 2000, 4000, 4}, 4.0), 0.5);
}

} // namespace

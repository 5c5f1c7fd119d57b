//===- BenchLayoutTest.cpp - overlap-bench's tiles and arguments ----------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The parts of overlap-bench that decide what the GPU is asked to do: the
// tile layout (it must be the compiler's decomposition), the wire bytes of
// the copy-engine stand-in, uniform tiles, argument lists, and the pack
// benchmark's blocks and host reference; and what the ranks of a
// multi-process run compute on the host (BenchRanks.h): inputs per rank,
// references and the bound of a sum over ranks, reports and their
// reduction. No GPU needed.
//
//===----------------------------------------------------------------------===//

#include "BenchLayout.h"
#include "BenchRanks.h"

#include "gtest/gtest.h"

#include <cmath>
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

//===----------------------------------------------------------------------===//
// Several ranks (BenchRanks.h)
//===----------------------------------------------------------------------===//

constexpr overlap_dtype allTypes[] = {OVERLAP_F32, OVERLAP_F16, OVERLAP_BF16};

/// Decodes f32, f16 or bf16 bits independently of storeExact.
double decode(overlap_dtype dtype, const char *bytes) {
  if (dtype == OVERLAP_F32) {
    float f;
    std::memcpy(&f, bytes, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes, 2);
  const double sign = h & 0x8000 ? -1.0 : 1.0;
  if (dtype == OVERLAP_BF16) {
    uint32_t f = uint32_t(h) << 16;
    float v;
    std::memcpy(&v, &f, 4);
    return v;
  }
  int exponent = (h >> 10) & 0x1f, fraction = h & 0x3ff;
  if (exponent == 0)
    return sign * std::ldexp(fraction, -24);
  return sign * std::ldexp(1024 + fraction, exponent - 25);
}

/// `x` rounded to `bits` significant bits, to nearest even (a reduction
/// step in the element type).
double roundTo(double x, int bits) {
  if (x == 0)
    return 0;
  int e;
  std::frexp(x, &e);
  return std::ldexp(std::nearbyint(std::ldexp(x, bits - e)), e - bits);
}

TEST(BenchRanks, InputsAreExactNonzeroAndInRange) {
  for (overlap_dtype dtype : allTypes) {
    const int bits = significandBits(dtype);
    const size_t count = 20000;
    std::vector<char> bytes = inputElements(dtype, 42, count);
    size_t negative = 0;
    std::set<double> distinct;
    for (size_t i = 0; i < count; ++i) {
      double v = inputElement(dtype, 42, i);
      ASSERT_NE(v, 0.0);
      ASSERT_GE(v, -1.0);
      ASSERT_LT(v, 1.0);
      // k / 2^(bits-1): exact in the type.
      double k = std::ldexp(v, bits - 1);
      ASSERT_EQ(k, std::floor(k)) << v;
      ASSERT_EQ(decode(dtype, &bytes[i * (dtype == OVERLAP_F32 ? 4 : 2)]), v)
          << "element " << i;
      negative += v < 0;
      distinct.insert(v);
    }
    EXPECT_NEAR(double(negative) / count, 0.5, 0.02);
    EXPECT_GT(distinct.size(), std::min<size_t>(count / 2, (1u << bits) - 2));
  }
}

TEST(BenchRanks, StoreExactBits) {
  auto bits16 = [](overlap_dtype dtype, float v) {
    char b[2];
    storeExact(dtype, v, b);
    uint16_t h;
    std::memcpy(&h, b, 2);
    return h;
  };
  EXPECT_EQ(bits16(OVERLAP_F16, 0.5f), 0x3800);
  EXPECT_EQ(bits16(OVERLAP_F16, -0.75f), 0xba00);
  EXPECT_EQ(bits16(OVERLAP_F16, 1.0f / 1024), 0x1400);
  EXPECT_EQ(bits16(OVERLAP_F16, -1023.0f / 1024), 0xbbfe);
  EXPECT_EQ(bits16(OVERLAP_BF16, 0.5f), 0x3f00);
  EXPECT_EQ(bits16(OVERLAP_BF16, -1.0f / 128), 0xbc00);
  char f[4];
  storeExact(OVERLAP_F32, -0.375f, f);
  float back;
  std::memcpy(&back, f, 4);
  EXPECT_EQ(back, -0.375f);
}

TEST(BenchRanks, SeedsDifferPerSetRankAndOperand) {
  std::set<uint64_t> seeds;
  for (uint64_t set : {0, 1, 7919, 7920})
    for (int64_t rank = 0; rank < 64; ++rank)
      for (Operand op : {Operand::A, Operand::B, Operand::C0})
        seeds.insert(inputSeed(set, rank, op));
  EXPECT_EQ(seeds.size(), 4u * 64 * 3);
  // Two ranks' matrices share no long runs of equal elements.
  std::vector<char> r0 =
      inputElements(OVERLAP_BF16, inputSeed(5, 0, Operand::A), 64);
  std::vector<char> r1 =
      inputElements(OVERLAP_BF16, inputSeed(5, 1, Operand::A), 64);
  EXPECT_NE(r0, r1);
}

TEST(BenchRanks, ElementsAreRandomAccess) {
  for (overlap_dtype dtype : allTypes) {
    std::vector<char> all = inputElements(dtype, 9, 100);
    std::vector<char> tail = inputElements(dtype, 9, 40, 60);
    const size_t elt = dtype == OVERLAP_F32 ? 4 : 2;
    EXPECT_EQ(std::vector<char>(all.begin() + 60 * elt, all.end()), tail);
  }
}

// The reference is C0 + A.B of the matrices a rank uploads; for all-gather
// A is every rank's shard in rank order.
TEST(BenchRanks, ReferenceIsTheProductOfTheUploadedMatrices) {
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather}) {
    RankProblem p{c, 6, 5, 7, 3, OVERLAP_F16, 1234};
    std::vector<char> gathered = p.gatheredA();
    ASSERT_EQ(gathered.size(), size_t(p.group * p.aRows() * p.k) * 2);
    for (int64_t r = 0; r < p.group; ++r) {
      std::vector<char> a = inputElements(p.dtype, p.seed(r, Operand::A),
                                          size_t(p.aRows() * p.k));
      std::vector<char> b =
          inputElements(p.dtype, p.seed(r, Operand::B), size_t(p.k * p.n));
      std::vector<char> c0 =
          inputElements(p.dtype, p.seed(r, Operand::C0), size_t(p.m * p.n));
      // The gathered A holds rank r's shard as block r.
      EXPECT_TRUE(
          std::equal(a.begin(), a.end(),
                     gathered.begin() + ptrdiff_t(r * p.aRows() * p.k * 2)));
      for (int64_t i = 0; i < p.m; ++i)
        for (int64_t j = 0; j < p.n; ++j) {
          double want = decode(p.dtype, &c0[size_t(i * p.n + j) * 2]);
          for (int64_t q = 0; q < p.k; ++q) {
            double aiq =
                p.gathers()
                    ? decode(p.dtype, &gathered[size_t(i * p.k + q) * 2])
                    : decode(p.dtype, &a[size_t(i * p.k + q) * 2]);
            want += aiq * decode(p.dtype, &b[size_t(q * p.n + j) * 2]);
          }
          // Exact: few products of short grid values.
          EXPECT_EQ(p.reference(r, i, j), want)
              << planner::toString(c).str() << " rank " << r << " (" << i
              << ", " << j << ")";
        }
    }
  }
}

TEST(BenchRanks, OneRankMustDeliverItsInputExactly) {
  RankProblem p{Collective::AllReduce, 4, 4, 8, 1, OVERLAP_BF16, 3};
  Expected e = expectedSum(p, 0, 0.8125, 1, 2);
  EXPECT_EQ(e.value, 0.8125);
  EXPECT_EQ(e.bound, 0.0);
  EXPECT_TRUE(e.accepts(0.8125));
  EXPECT_FALSE(e.accepts(0.8125 + std::ldexp(1.0, -40)));
  EXPECT_FALSE(e.accepts(NAN));
}

// A sum over G ranks whose terms are each off by up to a GEMM's tolerance,
// reduced with a rounding to the element type at every step (a ring), is
// accepted from every rank's point of view; the same sum with one rank's
// term missing (a collective that skipped a peer) is caught in most
// samples, as is a term counted twice.
TEST(BenchRanks, SumBoundFitsRoundedReductions) {
  std::mt19937_64 rng(17);
  for (overlap_dtype dtype : allTypes) {
    const int bits = significandBits(dtype);
    const double tol = gemmTolerance(dtype);
    for (int64_t group : {2, 3, 8}) {
      RankProblem p{Collective::AllReduce, 32, 32, 256, group, dtype, 99};
      int samples = 0, missed = 0, doubled = 0;
      for (int sample = 0; sample < 200; ++sample) {
        int64_t i = int64_t(rng() % 32), j = int64_t(rng() % 32);
        // What each GPU computed: its reference, pushed towards the edge
        // of the tolerance in a random direction, in the element type.
        std::vector<double> term;
        for (int64_t r = 0; r < group; ++r) {
          double ref = p.reference(r, i, j);
          double push = (rng() % 2 ? 0.9 : -0.9) * tol * (1 + std::abs(ref));
          term.push_back(roundTo(ref + push, bits));
        }
        double sum = term[0];
        for (int64_t r = 1; r < group; ++r)
          sum = roundTo(sum + term[size_t(r)], bits);
        for (int64_t me = 0; me < group; ++me) {
          Expected e = expectedSum(p, me, term[size_t(me)], i, j);
          ASSERT_TRUE(e.accepts(sum))
              << "dtype " << dtype << " G " << group << " rank " << me << ": "
              << sum << " vs " << e.value << " +- " << e.bound;
        }
        // Seen from rank 0: rank G-1's term missing, or rank 1's doubled.
        Expected e = expectedSum(p, 0, term[0], i, j);
        ++samples;
        missed += !e.accepts(sum - term[size_t(group - 1)]);
        doubled += !e.accepts(sum + term[1]);
      }
      // The bound grows with the tolerance: bf16's is the loosest.
      const double caught = dtype == OVERLAP_BF16 ? 0.7 : 0.9;
      EXPECT_GE(missed, caught * samples)
          << "dtype " << dtype << " G " << group;
      EXPECT_GE(doubled, caught * samples)
          << "dtype " << dtype << " G " << group;
    }
  }
}

TEST(BenchRanks, SumResultRows) {
  std::string why;
  auto rs =
      TileLayout::create(Collective::ReduceScatter, 16, 4, {8, 4, 4}, why);
  ASSERT_TRUE(rs) << why;
  for (int64_t me = 0; me < 4; ++me)
    for (size_t t = 0; t < rs->size(); ++t)
      for (int64_t row = 0; row < (*rs)[t].blockRows; ++row) {
        // Row q of the result is the tile's row of block `me`.
        int64_t q = (*rs)[t].blockOffset + row;
        int64_t i = sumResultRow(*rs, me, q);
        EXPECT_EQ(i, rs->globalRow(t, me, row));
        TileLayout::Location at = rs->locate(i);
        EXPECT_EQ(at.tile, t);
        EXPECT_EQ(at.slot, me);
      }
  auto ar = TileLayout::create(Collective::AllReduce, 10, 4, {6, 4}, why);
  ASSERT_TRUE(ar) << why;
  for (int64_t q = 0; q < 10; ++q)
    EXPECT_EQ(sumResultRow(*ar, 3, q), q);
}

TEST(BenchRanks, FirstNaNFindsThePoison) {
  for (overlap_dtype dtype : allTypes) {
    const size_t elt = dtype == OVERLAP_F32 ? 4 : 2;
    std::vector<char> bytes = inputElements(dtype, 5, 100);
    EXPECT_EQ(firstNaN(dtype, bytes.data(), 100), -1);
    std::fill_n(bytes.begin() + 37 * elt, elt, char(0xff));
    EXPECT_EQ(firstNaN(dtype, bytes.data(), 100), 37);
    EXPECT_EQ(firstNaN(dtype, bytes.data(), 37), -1);
  }
  // Infinities are not NaN.
  const uint16_t inf16[] = {0x7c00, 0xfc00};
  EXPECT_EQ(firstNaN(OVERLAP_F16, reinterpret_cast<const char *>(inf16), 2),
            -1);
  const uint16_t infBf16[] = {0x7f80, 0x7fc0};
  EXPECT_EQ(firstNaN(OVERLAP_BF16, reinterpret_cast<const char *>(infBf16), 2),
            1);
}

TEST(BenchReports, RoundTrip) {
  RankReport r;
  r.rank = 5;
  r.fingerprint = 0x0123456789abcdefULL;
  r.message = "serial: tile 2: C(1, 2) = nan";
  r.values = {1.5, -2.25, 1e300};
  std::vector<char> bytes = encodeReport(r);
  EXPECT_EQ(bytes.size(), reportBytes(3));
  EXPECT_EQ(reportBytes(3) % 8, 0u);
  RankReport back;
  std::string why;
  ASSERT_TRUE(decodeReport(bytes.data(), bytes.size(), back, why)) << why;
  EXPECT_EQ(back.rank, 5);
  EXPECT_EQ(back.fingerprint, r.fingerprint);
  EXPECT_EQ(back.message, r.message);
  EXPECT_EQ(back.values, r.values);

  r.message = std::string(1000, 'x');
  r.values.clear();
  bytes = encodeReport(r);
  ASSERT_TRUE(decodeReport(bytes.data(), bytes.size(), back, why)) << why;
  EXPECT_EQ(back.message, std::string(reportMessageBytes - 1, 'x'));
  EXPECT_TRUE(back.values.empty());

  EXPECT_FALSE(decodeReport(bytes.data(), bytes.size() - 8, back, why));
  EXPECT_FALSE(why.empty());
  bytes[0] ^= 1;
  EXPECT_FALSE(decodeReport(bytes.data(), bytes.size(), back, why));
  EXPECT_NE(why.find("magic"), std::string::npos) << why;
  // Three numbers announced, none sent.
  r.values = {1, 2, 3};
  bytes = encodeReport(r);
  bytes.resize(reportBytes(0));
  EXPECT_FALSE(decodeReport(bytes.data(), bytes.size(), back, why));
}

TEST(BenchReports, SlowestRankPerRun) {
  std::vector<RankReport> reports(3);
  reports[0].values = {10, 20, 30};
  reports[1].values = {12, 19, 30};
  reports[2].values = {11, 25, 29};
  EXPECT_EQ(maxOverRanks(reports), (std::vector<double>{12, 25, 30}));
  reports[1].values[0] = NAN;
  EXPECT_TRUE(std::isnan(maxOverRanks(reports)[0]));
  reports[2].values.pop_back();
  EXPECT_TRUE(maxOverRanks(reports).empty());
  EXPECT_TRUE(maxOverRanks({}).empty());
}

TEST(BenchReports, Failures) {
  std::vector<RankReport> reports(4);
  for (int32_t r = 0; r < 4; ++r)
    reports[size_t(r)].rank = r;
  EXPECT_EQ(describeFailures(reports), "");
  reports[2].message = "overlapped: tile 1: wrong";
  EXPECT_EQ(describeFailures(reports), "rank 2: overlapped: tile 1: wrong");
  reports[3].message = "serial: x";
  EXPECT_EQ(describeFailures(reports),
            "rank 2: overlapped: tile 1: wrong (and 1 more rank)");
  reports[0].message = "serial: y";
  EXPECT_EQ(describeFailures(reports), "rank 0: serial: y (and 2 more ranks)");
  // One rank: no rank prefix (the one-process output is unchanged).
  EXPECT_EQ(describeFailures({reports[3]}), "serial: x");
}

TEST(BenchReports, ArgumentFingerprints) {
  using Args = std::vector<std::string>;
  const Args ignored = {"--csv"};
  const Args base = {"--leg", "nccl", "--csv", "a.csv", "--iters", "5"};
  const uint64_t h = argumentFingerprint(base, ignored, "");
  EXPECT_EQ(h, argumentFingerprint(base, ignored, ""));
  // The CSV only rank 0 writes does not matter; everything else does.
  EXPECT_EQ(
      h, argumentFingerprint(
             {"--leg", "nccl", "--csv", "b.csv", "--iters", "5"}, ignored, ""));
  EXPECT_EQ(
      h, argumentFingerprint({"--leg", "nccl", "--iters", "5"}, ignored, ""));
  EXPECT_NE(
      h, argumentFingerprint(
             {"--leg", "nccl", "--csv", "a.csv", "--iters", "6"}, ignored, ""));
  EXPECT_NE(
      h, argumentFingerprint({"--iters", "5", "--leg", "nccl"}, ignored, ""));
  EXPECT_NE(h, argumentFingerprint(base, ignored, "{profile}"));
  EXPECT_NE(argumentFingerprint({"ab", "c"}, {}, ""),
            argumentFingerprint({"a", "bc"}, {}, ""));

  std::vector<RankReport> reports(4);
  for (int32_t r = 0; r < 4; ++r) {
    reports[size_t(r)].rank = r;
    reports[size_t(r)].fingerprint = h;
  }
  EXPECT_TRUE(mismatchedRanks(reports).empty());
  reports[1].fingerprint = h + 1;
  reports[3].fingerprint = h + 2;
  EXPECT_EQ(mismatchedRanks(reports), (std::vector<int32_t>{1, 3}));
}

} // namespace

//===- RankProblemTest.cpp - Inputs and references of every rank ----------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// What the ranks of a multi-process run compute on the host: inputs per
// rank, references and the bound of a sum over ranks, reading elements.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/RankProblem.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>
#include <set>

using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;
using planner::TileLayout;

namespace {

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

TEST(RankProblem, InputsAreExactNonzeroAndInRange) {
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

TEST(RankProblem, StoreExactBits) {
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

TEST(RankProblem, SeedsDifferPerSetRankAndOperand) {
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

TEST(RankProblem, ElementsAreRandomAccess) {
  for (overlap_dtype dtype : allTypes) {
    std::vector<char> all = inputElements(dtype, 9, 100);
    std::vector<char> tail = inputElements(dtype, 9, 40, 60);
    const size_t elt = dtype == OVERLAP_F32 ? 4 : 2;
    EXPECT_EQ(std::vector<char>(all.begin() + 60 * elt, all.end()), tail);
  }
}

// The reference is C0 + A.B of the matrices a rank uploads; for all-gather
// A is every rank's shard in rank order.
TEST(RankProblem, ReferenceIsTheProductOfTheUploadedMatrices) {
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

// Dispatch: what rank r receives is block r of every rank's A in rank
// order, and its reference multiplies exactly that.
TEST(RankProblem, DispatchMultipliesWhatArrives) {
  RankProblem p{Collective::AllToAll, 6, 5, 7, 3, OVERLAP_F16, 99};
  p.side = planner::AllToAllSide::Dispatch;
  ASSERT_TRUE(p.dispatches());
  ASSERT_EQ(p.aRows(), p.m); // every rank holds all M rows of its tokens
  const int64_t block = p.m / p.group;
  for (int64_t r = 0; r < p.group; ++r) {
    std::vector<char> arrived = p.dispatchedA(r);
    ASSERT_EQ(arrived.size(), size_t(p.m * p.k) * 2);
    std::vector<char> b =
        inputElements(p.dtype, p.seed(r, Operand::B), size_t(p.k * p.n));
    std::vector<char> c0 =
        inputElements(p.dtype, p.seed(r, Operand::C0), size_t(p.m * p.n));
    for (int64_t i = 0; i < p.m; ++i) {
      // Row i came from rank i / block, its row r * block + i % block.
      std::vector<char> from = inputElements(
          p.dtype, p.seed(i / block, Operand::A), size_t(p.k),
          size_t((r * block + i % block) * p.k));
      EXPECT_TRUE(std::equal(from.begin(), from.end(),
                             arrived.begin() + ptrdiff_t(i * p.k * 2)))
          << "rank " << r << " row " << i;
      for (int64_t j = 0; j < p.n; ++j) {
        double want = decode(p.dtype, &c0[size_t(i * p.n + j) * 2]);
        for (int64_t q = 0; q < p.k; ++q)
          want += decode(p.dtype, &arrived[size_t(i * p.k + q) * 2]) *
                  decode(p.dtype, &b[size_t(q * p.n + j) * 2]);
        EXPECT_EQ(p.reference(r, i, j), want);
      }
    }
  }
  // Combine multiplies the rank's own A, as reduce-scatter does.
  p.side = planner::AllToAllSide::Combine;
  EXPECT_TRUE(p.combines());
  EXPECT_EQ(p.gemmA(1, 4, 2), p.a(1, 4, 2));
}

TEST(RankProblem, OneRankMustDeliverItsInputExactly) {
  RankProblem p{Collective::AllReduce, 4, 4, 8, 1, OVERLAP_BF16, 3};
  ExpectedElement e = expectedSum(p, 0, 0.8125, 1, 2);
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
TEST(RankProblem, SumBoundFitsRoundedReductions) {
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
          ExpectedElement e = expectedSum(p, me, term[size_t(me)], i, j);
          ASSERT_TRUE(e.accepts(sum))
              << "dtype " << dtype << " G " << group << " rank " << me << ": "
              << sum << " vs " << e.value << " +- " << e.bound;
        }
        // Seen from rank 0: rank G-1's term missing, or rank 1's doubled.
        ExpectedElement e = expectedSum(p, 0, term[0], i, j);
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

TEST(RankProblem, SumResultRows) {
  auto rs = TileLayout::create(Collective::ReduceScatter, 16, 4, {8, 4, 4});
  ASSERT_TRUE(bool(rs)) << llvm::toString(rs.takeError());
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
  auto ar = TileLayout::create(Collective::AllReduce, 10, 4, {6, 4});
  ASSERT_TRUE(bool(ar)) << llvm::toString(ar.takeError());
  for (int64_t q = 0; q < 10; ++q)
    EXPECT_EQ(sumResultRow(*ar, 3, q), q);
}

TEST(RankProblem, FirstNaNFindsThePoison) {
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

// decodeElement reads any bits: the inputs exactly, the poison as NaN,
// infinities, f16 subnormals.
TEST(RankProblem, DecodeElement) {
  for (overlap_dtype dtype : allTypes) {
    const size_t elt = dtype == OVERLAP_F32 ? 4 : 2;
    std::vector<char> bytes = inputElements(dtype, 77, 500);
    for (size_t i = 0; i < 500; ++i) {
      ASSERT_EQ(elementAt(bytes, dtype, i), inputElement(dtype, 77, i));
      ASSERT_EQ(double(decodeElement(dtype, &bytes[i * elt])),
                decode(dtype, &bytes[i * elt]));
    }
    const char poison[4] = {char(0xff), char(0xff), char(0xff), char(0xff)};
    EXPECT_TRUE(std::isnan(decodeElement(dtype, poison)));
  }
  auto f16 = [](uint16_t h) {
    char b[2];
    std::memcpy(b, &h, 2);
    return decodeElement(OVERLAP_F16, b);
  };
  EXPECT_EQ(f16(0x7c00), INFINITY);
  EXPECT_EQ(f16(0xfc00), -INFINITY);
  EXPECT_EQ(f16(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16(0x8200), -std::ldexp(1.0f, -15));
  EXPECT_EQ(f16(0x3c00), 1.0f);
  EXPECT_EQ(f16(0xc000), -2.0f);
}

} // namespace

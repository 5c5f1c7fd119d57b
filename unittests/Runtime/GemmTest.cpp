//===- GemmTest.cpp - Host GEMM against a reference, and tiling -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

using namespace overlap::test;

namespace {

struct Types {
  overlap_dtype ab, c;
};

const Types kTypes[] = {{OVERLAP_F32, OVERLAP_F32},
                        {OVERLAP_F16, OVERLAP_F32},
                        {OVERLAP_F16, OVERLAP_F16},
                        {OVERLAP_BF16, OVERLAP_F32},
                        {OVERLAP_BF16, OVERLAP_BF16}};

std::string name(Types t) {
  return std::string(dtypeName(t.ab)) + "->" + dtypeName(t.c);
}

/// A batched GEMM problem with padded, NaN-poisoned leading dimensions.
struct Problem {
  int64_t batch, m, n, k, lda, ldb, ldc, strideA, strideB, strideC;
  Types types;
  Buffer a, b, c;

  Problem(Types t, int64_t batch, int64_t m, int64_t n, int64_t k,
          bool broadcastB, uint64_t seed)
      : batch(batch), m(m), n(n), k(k), lda(k + 3), ldb(n + 5), ldc(n + 2),
        strideA(m * lda + 7), strideB(broadcastB ? 0 : k * ldb + 1),
        strideC(m * ldc + 4), types(t), a(t.ab, size_t(batch * strideA)),
        b(t.ab, size_t(broadcastB ? k * ldb : batch * strideB)),
        c(t.c, size_t(batch * strideC)) {
    // Padding is NaN: a kernel that reads or writes outside the matrices
    // shows it.
    a.fill(nan());
    b.fill(nan());
    c.fill(nan());
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto value = [&] {
      float v = dist(rng);
      return v == 0.0f ? 0.5f : v;
    };
    for (int64_t bi = 0; bi < batch; ++bi) {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t kk = 0; kk < k; ++kk)
          a.set(bi * strideA + i * lda + kk, value());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          c.set(bi * strideC + i * ldc + j, value());
    }
    int64_t bMatrices = broadcastB ? 1 : batch;
    for (int64_t bi = 0; bi < bMatrices; ++bi)
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < n; ++j)
          b.set(bi * strideB + kk * ldb + j, value());
  }

  /// Rows [row, row + rows) of every batch, as one call.
  overlap_status run(overlap_context *ctx, int64_t tile, int64_t row,
                     int64_t rows) {
    size_t ea = overlap_dtype_size(types.ab), ec = overlap_dtype_size(types.c);
    return overlap_gemm(ctx, OVERLAP_STREAM_COMPUTE, tile, batch, rows, n, k,
                        types.ab, a.bytes() + row * lda * ea, lda, strideA,
                        b.data(), ldb, strideB, types.c,
                        c.bytes() + row * ldc * ec, ldc, strideC, 0);
  }
};

/// Runs `body` on one rank and expects success.
void onOneRank(const std::function<void(overlap_context *)> &body) {
  overlap_host_options opts = quietOptions();
  ASSERT_EQ(launch(1, &opts, body), OVERLAP_SUCCESS)
      << overlap_host_launch_error();
}

TEST(Gemm, MatchesReferenceForEveryType) {
  for (Types t : kTypes) {
    for (bool broadcast : {false, true}) {
      // n > 256 and m % 4 != 0 exercise the kernel's partial blocks.
      Problem p(t, 3, 37, 300, 19, broadcast, 11);
      Buffer before = p.c;
      onOneRank([&](overlap_context *ctx) {
        EXPECT_EQ(p.run(ctx, 0, 0, p.m), OVERLAP_SUCCESS)
            << overlap_last_error(ctx);
      });
      int bad = 0;
      for (int64_t bi = 0; bi < p.batch; ++bi) {
        for (int64_t i = 0; i < p.m; ++i) {
          for (int64_t j = 0; j < p.ldc; ++j) {
            size_t at = size_t(bi * p.strideC + i * p.ldc + j);
            if (j >= p.n) {
              // Padding stays as it was (NaN).
              if (!std::isnan(p.c.get(at)) && ++bad < 5)
                ADD_FAILURE() << name(t) << ": wrote padding at " << at;
              continue;
            }
            double ref = before.get(at), mag = std::fabs(ref);
            for (int64_t kk = 0; kk < p.k; ++kk) {
              double prod =
                  double(p.a.get(size_t(bi * p.strideA + i * p.lda + kk))) *
                  p.b.get(size_t(bi * p.strideB + kk * p.ldb + j));
              ref += prod;
              mag += std::fabs(prod);
            }
            // f32 accumulation error, then one rounding to the C type.
            double tol = 4e-7 * (p.k + 1) * mag +
                         (t.c == OVERLAP_F16 ? std::ldexp(std::fabs(ref), -10)
                          : t.c == OVERLAP_BF16 ? std::ldexp(std::fabs(ref), -7)
                                                : 0.0);
            double got = p.c.get(at);
            if (!(std::fabs(got - ref) <= tol) && ++bad < 5)
              ADD_FAILURE() << name(t) << " broadcast=" << broadcast
                            << " batch " << bi << " (" << i << ", " << j
                            << "): got " << got << ", want " << ref;
          }
        }
      }
      EXPECT_EQ(bad, 0) << name(t);
    }
  }
}

TEST(Gemm, TilingAlongMIsBitIdentical) {
  // Uneven tiles, including a one-row tile and tiles not a multiple of the
  // kernel's row block.
  const int64_t tiles[] = {1, 64, 7, 131};
  for (Types t : kTypes) {
    for (bool broadcast : {false, true}) {
      Problem whole(t, 2, 203, 270, 45, broadcast, 5);
      Problem tiled = whole;
      onOneRank([&](overlap_context *ctx) {
        EXPECT_EQ(whole.run(ctx, -1, 0, whole.m), OVERLAP_SUCCESS);
        int64_t row = 0, index = 0;
        for (int64_t rows : tiles) {
          EXPECT_EQ(tiled.run(ctx, index++, row, rows), OVERLAP_SUCCESS)
              << overlap_last_error(ctx);
          row += rows;
        }
        ASSERT_EQ(row, whole.m);
        EXPECT_EQ(overlap_context_synchronize(ctx), OVERLAP_SUCCESS);
      });
      size_t differ = 0;
      for (size_t i = 0; i < whole.c.size(); ++i)
        if (whole.c.bits(i) != tiled.c.bits(i))
          ++differ;
      EXPECT_EQ(differ, 0u) << name(t) << " broadcast=" << broadcast;
    }
  }
}

TEST(Gemm, ZeroSizesAreNoOps) {
  Problem p(kTypes[0], 1, 4, 4, 4, false, 3);
  Buffer before = p.c;
  onOneRank([&](overlap_context *ctx) {
    EXPECT_EQ(overlap_gemm(ctx, 0, 0, 1, 4, 4, 0, OVERLAP_F32, nullptr, 0, 0,
                           nullptr, 0, 0, OVERLAP_F32, p.c.data(), p.ldc, 0, 0),
              OVERLAP_SUCCESS);
    EXPECT_EQ(overlap_gemm(ctx, 0, 0, 0, 4, 4, 4, OVERLAP_F32, nullptr, 0, 0,
                           nullptr, 0, 0, OVERLAP_F32, nullptr, 0, 0, 0),
              OVERLAP_SUCCESS);
  });
  for (size_t i = 0; i < p.c.size(); ++i)
    EXPECT_EQ(p.c.bits(i), before.bits(i));
}

TEST(Gemm, BadArgumentsNameCallRankStreamAndTile) {
  struct Case {
    int64_t lda, ldb, ldc;
    overlap_dtype ab, c;
    int32_t stream;
    const char *message;
  } cases[] = {
      {3, 4, 4, OVERLAP_F32, OVERLAP_F32, 0,
       "overlap_gemm: rank 0, stream compute, tile 5: lda (3) < k (4)"},
      {4, 2, 4, OVERLAP_F32, OVERLAP_F32, 1,
       "overlap_gemm: rank 0, stream comm, tile 5: ldb (2) < n (4)"},
      {4, 4, 4, OVERLAP_F32, OVERLAP_F32, 9,
       "overlap_gemm: rank 0, stream 9, tile 5: no such stream (the context "
       "has 2)"},
      {4, 4, 4, OVERLAP_F32, OVERLAP_F16, 0,
       "overlap_gemm: rank 0, stream compute, tile 5: C element type 1 is "
       "neither f32 nor the A/B type 0"},
  };
  for (const Case &c : cases) {
    std::vector<float> a(16, 1.0f), b(16, 1.0f), out(16, 1.0f);
    std::string error = refusalOnOneRank([&](overlap_context *ctx) {
      EXPECT_EQ(overlap_gemm(ctx, c.stream, 5, 1, 4, 4, 4, c.ab, a.data(),
                             c.lda, 0, b.data(), c.ldb, 0, c.c, out.data(),
                             c.ldc, 0, 0),
                OVERLAP_ERROR_INVALID_ARGUMENT);
      std::string first = overlap_last_error(ctx);
      // Sticky: later work is refused with the same status.
      EXPECT_EQ(overlap_memcpy(ctx, 0, -1, a.data(), b.data(), 4),
                OVERLAP_ERROR_INVALID_ARGUMENT);
      EXPECT_EQ(overlap_last_error(ctx), first);
    });
    EXPECT_EQ(error, c.message);
    EXPECT_EQ(std::string(overlap_host_launch_error()), c.message);
  }
}

} // namespace

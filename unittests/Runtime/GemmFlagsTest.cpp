//===- GemmFlagsTest.cpp - overlap_gemm's transpose and overwrite flags ---===//
//
// Part of the Overlap project.
//
// Each flag is checked against what it replaces, bit for bit: a transposed
// operand against the GEMM of an explicitly transposed copy, an overwrite
// against the GEMM into a zero-filled C, an overwrite into f16/bf16 C
// against the f32 GEMM rounded element by element afterwards (what
// overlap-fold-into-gemms folds: linalg.fill + matmul + arith.truncf).
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <gtest/gtest.h>

using namespace overlap::test;

namespace {

/// A batch of `rows x cols` matrices with leading dimension ld (padded with
/// NaN, which a kernel that reads outside shows).
struct Matrices {
  int64_t batch, rows, cols, ld, stride;
  Buffer data;
  Matrices(overlap_dtype t, int64_t batch, int64_t rows, int64_t cols,
           int64_t pad)
      : batch(batch), rows(rows), cols(cols), ld(cols + pad),
        stride(rows * (cols + pad) + 3),
        data(t, size_t(batch * (rows * (cols + pad) + 3))) {
    data.fill(nan());
  }
  size_t at(int64_t b, int64_t i, int64_t j) const {
    return size_t(b * stride + i * ld + j);
  }
  /// The transpose of every matrix of the batch.
  Matrices transposed(int64_t pad) const {
    Matrices t(data.type(), batch, cols, rows, pad);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          t.data.set(t.at(b, j, i), data.get(at(b, i, j)));
    return t;
  }
};

Matrices random(overlap_dtype t, int64_t batch, int64_t rows, int64_t cols,
                int64_t pad, uint64_t seed) {
  Matrices m(t, batch, rows, cols, pad);
  Buffer values(t, size_t(batch * rows * cols));
  values.randomize(seed);
  size_t next = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        m.data.set(m.at(b, i, j), values.get(next++));
  return m;
}

overlap_status gemm(overlap_context *ctx, int64_t m, int64_t n, int64_t k,
                    Matrices &a, Matrices &b, Matrices &c, int32_t flags) {
  return overlap_gemm(ctx, OVERLAP_STREAM_COMPUTE, 0, c.batch, m, n, k,
                      a.data.type(), a.data.data(), a.ld, a.stride,
                      b.data.data(), b.ld, b.stride, c.data.type(),
                      c.data.data(), c.ld, c.stride, flags);
}

void onOneRank(const std::function<void(overlap_context *)> &body) {
  overlap_host_options opts = quietOptions();
  ASSERT_EQ(launch(1, &opts, body), OVERLAP_SUCCESS)
      << overlap_host_launch_error();
}

/// Elements whose bits differ among the first `count` (all of x's when 0).
size_t differing(const Buffer &x, const Buffer &y, size_t count = 0) {
  size_t n = 0;
  for (size_t i = 0; i < (count ? count : x.size()); ++i)
    n += x.bits(i) != y.bits(i);
  return n;
}

const overlap_dtype kAB[] = {OVERLAP_F32, OVERLAP_F16, OVERLAP_BF16};

TEST(GemmFlags, TransposedOperandsEqualTransposedCopies) {
  const int64_t batch = 2, m = 13, n = 270, k = 21;
  for (overlap_dtype ab : kAB) {
    for (int32_t flags = 0; flags < 8; ++flags) {
      const bool ta = flags & OVERLAP_GEMM_TRANSPOSE_A,
                 tb = flags & OVERLAP_GEMM_TRANSPOSE_B,
                 overwrite = flags & OVERLAP_GEMM_OVERWRITE;
      Matrices a = random(ab, batch, m, k, 3, 7),
               b = random(ab, batch, k, n, 2, 8);
      Matrices c = random(OVERLAP_F32, batch, m, n, 1, 9);
      // As stored for the flags: A k x m, B n x k when transposed.
      Matrices aStored = ta ? a.transposed(5) : a;
      Matrices bStored = tb ? b.transposed(4) : b;
      Matrices withFlags = c, plain = c;
      if (overwrite) {
        withFlags.data.fill(nan()); // must not be read
        for (int64_t bi = 0; bi < batch; ++bi)
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j)
              plain.data.set(plain.at(bi, i, j), 0.0f);
      }
      onOneRank([&](overlap_context *ctx) {
        EXPECT_EQ(gemm(ctx, m, n, k, aStored, bStored, withFlags, flags),
                  OVERLAP_SUCCESS)
            << overlap_last_error(ctx);
        EXPECT_EQ(gemm(ctx, m, n, k, a, b, plain, 0), OVERLAP_SUCCESS)
            << overlap_last_error(ctx);
      });
      // Padding included: it is NaN in both and must stay so.
      EXPECT_EQ(differing(withFlags.data, plain.data), 0u)
          << dtypeName(ab) << " flags " << flags;
    }
  }
}

TEST(GemmFlags, OverwriteIntoHalfRoundsOnceLikeARoundingPass) {
  const int64_t m = 9, n = 300, k = 33;
  for (overlap_dtype ab : {OVERLAP_F16, OVERLAP_BF16}) {
    Matrices a = random(ab, 1, m, k, 0, 1), b = random(ab, 1, n, k, 0, 2);
    Matrices half(ab, 1, m, n, 0), sum(OVERLAP_F32, 1, m, n, 0);
    onOneRank([&](overlap_context *ctx) {
      const int32_t flags = OVERLAP_GEMM_OVERWRITE | OVERLAP_GEMM_TRANSPOSE_B;
      EXPECT_EQ(gemm(ctx, m, n, k, a, b, half, flags), OVERLAP_SUCCESS)
          << overlap_last_error(ctx);
      EXPECT_EQ(gemm(ctx, m, n, k, a, b, sum, flags), OVERLAP_SUCCESS)
          << overlap_last_error(ctx);
    });
    Buffer rounded(ab, size_t(m * n));
    for (size_t i = 0; i < rounded.size(); ++i)
      rounded.set(i, sum.data.get(i)); // set() rounds to nearest even
    EXPECT_EQ(differing(half.data, rounded, rounded.size()), 0u)
        << dtypeName(ab);
  }
}

TEST(GemmFlags, OverwriteWithKZeroWritesZeros) {
  Matrices c = random(OVERLAP_F32, 1, 4, 4, 1, 3);
  onOneRank([&](overlap_context *ctx) {
    EXPECT_EQ(overlap_gemm(ctx, 0, 0, 1, 4, 4, 0, OVERLAP_F32, nullptr, 0, 0,
                           nullptr, 0, 0, OVERLAP_F32, c.data.data(), c.ld, 0,
                           OVERLAP_GEMM_OVERWRITE),
              OVERLAP_SUCCESS)
        << overlap_last_error(ctx);
  });
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(c.data.bits(c.at(0, i, j)), 0u) << i << ", " << j;
}

TEST(GemmFlags, BadFlagsAndLeadingDimensionsSayWhich) {
  struct Case {
    int64_t lda, ldb;
    int32_t flags;
    const char *message;
  } cases[] = {
      {4, 4, 8,
       "overlap_gemm: rank 0, stream compute, tile 5: unknown flag bits 8 "
       "(OVERLAP_GEMM_TRANSPOSE_A 1, _TRANSPOSE_B 2, _OVERWRITE 4)"},
      {2, 4, OVERLAP_GEMM_TRANSPOSE_A,
       "overlap_gemm: rank 0, stream compute, tile 5: lda (2) < m (3), A "
       "transposed"},
      {4, 3, OVERLAP_GEMM_TRANSPOSE_B,
       "overlap_gemm: rank 0, stream compute, tile 5: ldb (3) < k (4), B "
       "transposed"},
  };
  for (const Case &c : cases) {
    std::vector<float> a(32, 1.0f), b(32, 1.0f), out(32, 1.0f);
    EXPECT_EQ(refusalOnOneRank([&](overlap_context *ctx) {
                EXPECT_EQ(overlap_gemm(ctx, 0, 5, 1, 3, 4, 4, OVERLAP_F32,
                                       a.data(), c.lda, 0, b.data(), c.ldb, 0,
                                       OVERLAP_F32, out.data(), 4, 0, c.flags),
                          OVERLAP_ERROR_INVALID_ARGUMENT);
              }),
              c.message);
  }
}

} // namespace

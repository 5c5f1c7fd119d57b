//===- Kernels.cpp - Host GEMM, reduction and pack loops -------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"
#include "overlap/Runtime/Numeric.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

using namespace overlap::runtime;
using namespace overlap::host;

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

namespace {

// Blocking only changes which elements are in flight together, never the
// order of the operations on one element: C (+0.0 overwritten), then
// k = 0, 1, ..., k-1; transposed operands change only where an element is
// read.
constexpr int64_t kRowBlock = 4;
constexpr int64_t kColBlock = 256;

template <overlap_dtype AB, overlap_dtype C> void gemmTyped(const GemmArgs &g) {
  using ABT = typename Elem<AB>::Storage;
  using CT = typename Elem<C>::Storage;
  const ABT *a = static_cast<const ABT *>(g.a);
  const ABT *b = static_cast<const ABT *>(g.b);
  CT *c = static_cast<CT *>(g.c);

  // B as f32 rows: the inner loop then is a plain float axpy that the
  // compiler vectorizes. A broadcast B (stride 0) is converted once.
  std::vector<float> bF32;
  float acc[kRowBlock * kColBlock];

  for (int64_t batch = 0; batch < g.batch; ++batch) {
    const ABT *aB = a + batch * g.strideA;
    const ABT *bB = b + batch * g.strideB;
    CT *cB = c + batch * g.strideC;

    // B (k x n) as f32 rows, transposed from its n x k storage when
    // OVERLAP_GEMM_TRANSPOSE_B says so.
    const float *bRows;
    int64_t ldbRows;
    if (AB == OVERLAP_F32 && !g.transB) {
      bRows = reinterpret_cast<const float *>(bB);
      ldbRows = g.ldb;
    } else {
      if (batch == 0 || g.strideB != 0) {
        bF32.resize(static_cast<size_t>(g.k * g.n));
        for (int64_t kk = 0; kk < g.k; ++kk)
          for (int64_t j = 0; j < g.n; ++j)
            bF32[kk * g.n + j] = Elem<AB>::load(g.transB ? bB[j * g.ldb + kk]
                                                         : bB[kk * g.ldb + j]);
      }
      bRows = bF32.data();
      ldbRows = g.n;
    }
    // Element (i, kk) of op(A).
    const int64_t aRowStride = g.transA ? 1 : g.lda;
    const int64_t aColStride = g.transA ? g.lda : 1;

    for (int64_t i0 = 0; i0 < g.m; i0 += kRowBlock) {
      int64_t rows = std::min(kRowBlock, g.m - i0);
      for (int64_t j0 = 0; j0 < g.n; j0 += kColBlock) {
        int64_t cols = std::min(kColBlock, g.n - j0);
        for (int64_t r = 0; r < rows; ++r) {
          const CT *cRow = cB + (i0 + r) * g.ldc + j0;
          float *accRow = acc + r * kColBlock;
          for (int64_t j = 0; j < cols; ++j)
            accRow[j] = g.overwrite ? 0.0f : Elem<C>::load(cRow[j]);
        }
        for (int64_t kk = 0; kk < g.k; ++kk) {
          const float *bRow = bRows + kk * ldbRows + j0;
          for (int64_t r = 0; r < rows; ++r) {
            float av =
                Elem<AB>::load(aB[(i0 + r) * aRowStride + kk * aColStride]);
            float *accRow = acc + r * kColBlock;
            for (int64_t j = 0; j < cols; ++j)
              accRow[j] += av * bRow[j];
          }
        }
        for (int64_t r = 0; r < rows; ++r) {
          CT *cRow = cB + (i0 + r) * g.ldc + j0;
          const float *accRow = acc + r * kColBlock;
          for (int64_t j = 0; j < cols; ++j)
            cRow[j] = Elem<C>::store(accRow[j]);
        }
      }
    }
  }
}

} // namespace

void overlap::host::gemmKernel(const GemmArgs &args) {
  switch (args.abType) {
  case OVERLAP_F32:
    return gemmTyped<OVERLAP_F32, OVERLAP_F32>(args);
  case OVERLAP_F16:
    if (args.cType == OVERLAP_F32)
      return gemmTyped<OVERLAP_F16, OVERLAP_F32>(args);
    return gemmTyped<OVERLAP_F16, OVERLAP_F16>(args);
  case OVERLAP_BF16:
    if (args.cType == OVERLAP_F32)
      return gemmTyped<OVERLAP_BF16, OVERLAP_F32>(args);
    return gemmTyped<OVERLAP_BF16, OVERLAP_BF16>(args);
  default: // other types are refused by the API before any kernel
    break;
  }
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {

constexpr int64_t kReduceBlock = 1024;

// max and min of a collective fold from -inf (+inf) with a comparison that
// a NaN never wins, as XLA's CPU all-reduce does (what jax.lax.pmax gives
// on CPU devices): NaN is skipped, and where every rank has NaN the result
// is -inf (+inf for min). A NaN that propagated here made the host backend
// disagree with JAX. (NCCL's fmaxf also skips NaN but gives NaN where all
// are NaN.)
inline float maxOf(float acc, float v) { return v > acc ? v : acc; }
inline float minOf(float acc, float v) { return v < acc ? v : acc; }

float identityOf(overlap_reduce_op op) {
  switch (op) {
  case OVERLAP_MAX:
    return -INFINITY;
  case OVERLAP_MIN:
    return INFINITY;
  case OVERLAP_PROD:
    return 1.0f;
  default: // sum, average
    return 0.0f;
  }
}

template <overlap_dtype T>
void reduceTyped(overlap_reduce_op op, const void *const *srcs, int count,
                 int64_t n, void *outVoid) {
  using S = typename Elem<T>::Storage;
  S *out = static_cast<S *>(outVoid);
  float acc[kReduceBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kReduceBlock) {
    int64_t len = std::min(kReduceBlock, n - i0);
    // Every op folds from its identity, as XLA's CPU all-reduce: a sum of
    // -0.0 on every rank is +0.0 (its sign shows in 1/x and rsqrt).
    std::fill(acc, acc + len, identityOf(op));
    for (int p = 0; p < count; ++p) {
      const S *src = static_cast<const S *>(srcs[p]) + i0;
      switch (op) {
      case OVERLAP_SUM:
      case OVERLAP_AVG:
        for (int64_t i = 0; i < len; ++i)
          acc[i] += Elem<T>::load(src[i]);
        break;
      case OVERLAP_PROD:
        for (int64_t i = 0; i < len; ++i)
          acc[i] *= Elem<T>::load(src[i]);
        break;
      case OVERLAP_MAX:
        for (int64_t i = 0; i < len; ++i)
          acc[i] = maxOf(acc[i], Elem<T>::load(src[i]));
        break;
      case OVERLAP_MIN:
        for (int64_t i = 0; i < len; ++i)
          acc[i] = minOf(acc[i], Elem<T>::load(src[i]));
        break;
      case OVERLAP_REDUCE_MAX_ENUM: // refused by the API
        break;
      }
    }
    if (op == OVERLAP_AVG) {
      float ranks = static_cast<float>(count);
      for (int64_t i = 0; i < len; ++i)
        acc[i] /= ranks;
    }
    for (int64_t i = 0; i < len; ++i)
      out[i0 + i] = Elem<T>::store(acc[i]);
  }
}

/// f64 and the integers: accumulated in the type (integers through their
/// unsigned twin, so that SUM and PROD wrap around as two's complement
/// does, with no undefined overflow), in group-rank order from the op's
/// identity; MAX and MIN of f64 skip NaN as the f32 fold does.
template <typename S, bool = std::is_floating_point_v<S>> struct AccOf {
  using type = S;
};
template <typename S> struct AccOf<S, false> {
  using type = std::make_unsigned_t<S>;
};

template <typename S>
void reduceExact(overlap_reduce_op op, const void *const *srcs, int count,
                 int64_t n, void *outVoid) {
  S *out = static_cast<S *>(outVoid);
  constexpr bool isFloat = std::is_floating_point_v<S>;
  using Acc = typename AccOf<S>::type;
  for (int64_t i = 0; i < n; ++i) {
    S best = isFloat ? (op == OVERLAP_MAX ? -INFINITY : INFINITY)
                     : (op == OVERLAP_MAX ? std::numeric_limits<S>::min()
                                          : std::numeric_limits<S>::max());
    Acc acc = op == OVERLAP_PROD ? Acc(1) : Acc(0);
    for (int p = 0; p < count; ++p) {
      S v = static_cast<const S *>(srcs[p])[i];
      switch (op) {
      case OVERLAP_SUM:
      case OVERLAP_AVG:
        acc = Acc(acc + Acc(v));
        break;
      case OVERLAP_PROD:
        // Through 64 bits: uint16_t * uint16_t would be an int product
        // that can overflow.
        if constexpr (isFloat)
          acc = acc * v;
        else
          acc = Acc(uint64_t(acc) * uint64_t(Acc(v)));
        break;
      case OVERLAP_MAX:
        best = v > best ? v : best;
        break;
      case OVERLAP_MIN:
        best = v < best ? v : best;
        break;
      case OVERLAP_REDUCE_MAX_ENUM: // refused by the API
        break;
      }
    }
    if (op == OVERLAP_MAX || op == OVERLAP_MIN)
      out[i] = best;
    else if (op == OVERLAP_AVG)
      out[i] = static_cast<S>(static_cast<S>(acc) / static_cast<S>(count));
    else
      out[i] = static_cast<S>(acc);
  }
}

} // namespace

void overlap::host::reduceKernel(overlap_dtype dtype, overlap_reduce_op op,
                                 const void *const *srcs, int count, int64_t n,
                                 void *out) {
  switch (dtype) {
  case OVERLAP_F32:
    return reduceTyped<OVERLAP_F32>(op, srcs, count, n, out);
  case OVERLAP_F16:
    return reduceTyped<OVERLAP_F16>(op, srcs, count, n, out);
  case OVERLAP_BF16:
    return reduceTyped<OVERLAP_BF16>(op, srcs, count, n, out);
  case OVERLAP_F64:
    return reduceExact<double>(op, srcs, count, n, out);
  case OVERLAP_I8:
    return reduceExact<int8_t>(op, srcs, count, n, out);
  case OVERLAP_I16:
    return reduceExact<int16_t>(op, srcs, count, n, out);
  case OVERLAP_I32:
    return reduceExact<int32_t>(op, srcs, count, n, out);
  case OVERLAP_I64:
    return reduceExact<int64_t>(op, srcs, count, n, out);
  case OVERLAP_DTYPE_MAX_ENUM: // refused by the API
    break;
  }
}

//===----------------------------------------------------------------------===//
// Pack / unpack
//===----------------------------------------------------------------------===//

void overlap::host::packKernel(const PackArgs &p) {
  const size_t e = static_cast<size_t>(p.elemBytes);
  const size_t rowBytes = static_cast<size_t>(p.n2) * e;
  const char *src = static_cast<const char *>(p.src);
  char *dst = static_cast<char *>(p.dst);

  // A block whose rows and planes are adjacent is one contiguous copy.
  bool contiguous =
      (p.n1 == 1 || p.s1 == p.n2) && (p.n0 == 1 || p.s0 == p.n1 * p.n2);
  if (contiguous) {
    std::memcpy(dst, src, rowBytes * static_cast<size_t>(p.n1 * p.n0));
    return;
  }
  for (int64_t i0 = 0; i0 < p.n0; ++i0) {
    for (int64_t i1 = 0; i1 < p.n1; ++i1) {
      size_t strided = static_cast<size_t>(i0 * p.s0 + i1 * p.s1) * e;
      size_t packed = static_cast<size_t>(i0 * p.n1 + i1) * rowBytes;
      if (p.unpack)
        std::memcpy(dst + strided, src + packed, rowBytes);
      else
        std::memcpy(dst + packed, src + strided, rowBytes);
    }
  }
}

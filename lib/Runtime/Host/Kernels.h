//===- Kernels.h - Host GEMM, reduction and pack loops ---------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The arithmetic of the host backend, free of threads. The order of every
// floating-point operation is fixed by the element's position alone (never
// by tile sizes, blocking or timing), which is what makes results
// deterministic and tiling-invariant.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_HOST_KERNELS_H
#define OVERLAP_LIB_RUNTIME_HOST_KERNELS_H

#include "Context.h"

#include <cstdint>

namespace overlap {
namespace host {

/// C[b] += A[b] . B[b] for every batch, accumulating in f32 in k order.
void gemmKernel(const runtime::GemmArgs &args);

/// out[i] = op over p = 0 .. count-1 of srcs[p][i], for i < n, in f32, in
/// that order, rounded once. `out` may alias none of the sources.
void reduceKernel(overlap_dtype dtype, overlap_reduce_op op,
                  const void *const *srcs, int count, int64_t n, void *out);

/// Copies the strided block to or from the packed buffer.
void packKernel(const runtime::PackArgs &args);

} // namespace host
} // namespace overlap

#endif // OVERLAP_LIB_RUNTIME_HOST_KERNELS_H

//===- SmCopy.h - The sm-copy leg's copy kernel ----------------*- C++ -*-===//
//
// Part of the Overlap project. Private to lib/Calibration/Cuda.
//
//===----------------------------------------------------------------------===//
//
// The sm-copy leg (StandIn.h) moves its bytes with a kernel of a bounded
// number of CTAs on the context's comm stream instead of cudaMemcpyAsync,
// so that the copy takes SMs and follows the stream's priority as NCCL's
// kernels do.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_CALIBRATION_CUDA_SMCOPY_H
#define OVERLAP_LIB_CALIBRATION_CUDA_SMCOPY_H

#include "overlap/Runtime/overlap_runtime.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace overlap {
namespace calibration {

/// The kernel's block size (StandIn.h's kSmCopyThreads, which the pure side
/// plans with; SmCopy.cpp checks that they agree).
constexpr int kSmCopyKernelThreads = 512;

/// Launches the copy kernel: `blocks` blocks of kSmCopyKernelThreads threads
/// moving `bytes` bytes in words of `word` bytes (16, 8, 4, 2 or 1; both
/// addresses and `bytes` multiples of it) on `stream`. Returns the launch's
/// error.
cudaError_t launchSmCopyKernel(void *dst, const void *src, size_t bytes,
                               unsigned word, int blocks, cudaStream_t stream);

/// Copies `bytes` from `src` to `dst` (device-accessible memory) with at
/// most `ctas` CTAs on stream `stream` of `ctx`; exits the tool if the
/// launch fails.
void smCopy(overlap_context *ctx, int stream, void *dst, const void *src,
            size_t bytes, int ctas);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_LIB_CALIBRATION_CUDA_SMCOPY_H

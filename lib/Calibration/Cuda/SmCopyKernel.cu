//===- SmCopyKernel.cu - The sm-copy leg's copy kernel ------*- CUDA -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// A grid-stride copy in words of 16 bytes where the addresses allow, each
// thread keeping four independent loads in flight before its stores, so
// that a few CTAs come near the bandwidth one SM can draw. The grid is the
// leg's CTA budget, never more.
//
//===----------------------------------------------------------------------===//

#include "SmCopy.h"

#include <cstdint>

namespace overlap {
namespace calibration {
namespace {

template <typename Word>
__global__ void __launch_bounds__(kSmCopyKernelThreads)
    smCopyKernel(Word *__restrict__ dst, const Word *__restrict__ src,
                 size_t count) {
  constexpr int kInFlight = 4;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kInFlight - 1) * stride < count; i += kInFlight * stride) {
    Word w[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
      w[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
      dst[i + u * stride] = w[u];
  }
  for (; i < count; i += stride)
    dst[i] = src[i];
}

template <typename Word>
cudaError_t launch(void *dst, const void *src, size_t bytes, int blocks,
                   cudaStream_t stream) {
  smCopyKernel<Word><<<blocks, kSmCopyKernelThreads, 0, stream>>>(
      static_cast<Word *>(dst), static_cast<const Word *>(src),
      bytes / sizeof(Word));
  return cudaGetLastError();
}

} // namespace

cudaError_t launchSmCopyKernel(void *dst, const void *src, size_t bytes,
                               unsigned word, int blocks, cudaStream_t stream) {
  if (bytes == 0 || blocks <= 0)
    return cudaSuccess;
  switch (word) {
  case 16:
    return launch<uint4>(dst, src, bytes, blocks, stream);
  case 8:
    return launch<uint2>(dst, src, bytes, blocks, stream);
  case 4:
    return launch<uint32_t>(dst, src, bytes, blocks, stream);
  case 2:
    return launch<uint16_t>(dst, src, bytes, blocks, stream);
  case 1:
    return launch<uint8_t>(dst, src, bytes, blocks, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace calibration
} // namespace overlap

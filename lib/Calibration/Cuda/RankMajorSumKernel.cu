//===- RankMajorSumKernel.cu - Rank-major RS's final sum -------*- CUDA -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// One thread per output element (grid-stride): the G partials read in the
// ranks' order, widened to f32, added with __fadd_rn (round to nearest, never
// contracted or reassociated) from +0.0, and rounded once to the element
// type. This is the arithmetic of the compiled program's linalg.generic
// (DecomposeRankMajor.cpp's sumInOrder: arith.extf, arith.addf from 0.0 in
// rank order, arith.truncf), which the bench times in its place.
//
//===----------------------------------------------------------------------===//

#include "RankMajorSum.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

namespace overlap {
namespace calibration {
namespace {

__device__ float widen(float x) { return x; }
__device__ float widen(__half x) { return __half2float(x); }
__device__ float widen(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ T narrow(float x);
template <> __device__ float narrow<float>(float x) { return x; }
template <> __device__ __half narrow<__half>(float x) {
  return __float2half_rn(x);
}
template <> __device__ __nv_bfloat16 narrow<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    rankOrderSumKernel(const T *__restrict__ staging, T *__restrict__ out,
                       size_t slotElements, int group, int me) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t e = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
       e < slotElements; e += stride) {
    float acc = 0.0f;
    for (int q = 0; q < group; ++q) {
      const int slot = ((me - q) % group + group) % group;
      acc = __fadd_rn(acc, widen(staging[size_t(slot) * slotElements + e]));
    }
    out[e] = narrow<T>(acc);
  }
}

template <typename T>
cudaError_t launch(const void *staging, size_t slotElements, int group, int me,
                   void *out, cudaStream_t stream) {
  const size_t wanted = (slotElements + kThreads - 1) / kThreads;
  const int blocks = int(std::min<size_t>(wanted, 4096));
  rankOrderSumKernel<T><<<blocks, kThreads, 0, stream>>>(
      static_cast<const T *>(staging), static_cast<T *>(out), slotElements,
      group, me);
  return cudaGetLastError();
}

} // namespace

cudaError_t launchRankOrderSum(overlap_dtype dtype, const void *staging,
                               size_t slotElements, int group, int me,
                               void *out, cudaStream_t stream) {
  if (slotElements == 0)
    return cudaSuccess;
  switch (dtype) {
  case OVERLAP_F32:
    return launch<float>(staging, slotElements, group, me, out, stream);
  case OVERLAP_F16:
    return launch<__half>(staging, slotElements, group, me, out, stream);
  case OVERLAP_BF16:
    return launch<__nv_bfloat16>(staging, slotElements, group, me, out, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace calibration
} // namespace overlap

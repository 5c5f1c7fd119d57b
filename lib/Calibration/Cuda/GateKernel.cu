//===- GateKernel.cu - Holding a stream until the host has enqueued ------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "Gate.h"

namespace overlap {
namespace calibration {
namespace {

__device__ uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void gateKernel(GateWords *words, uint64_t boundNs) {
  const uint64_t began = globalTimerNs();
  while (words->open == 0) {
    if (globalTimerNs() - began > boundNs) {
      atomicAdd(const_cast<int32_t *>(&words->gaveUp), 1);
      return;
    }
    __nanosleep(500);
  }
}

} // namespace

cudaError_t preloadGateKernel() {
  // Under lazy loading cudaFuncGetAttributes loads the kernel's module.
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, gateKernel);
}

cudaError_t launchGateKernel(GateWords *words, uint64_t boundNs,
                             cudaStream_t stream) {
  gateKernel<<<1, 1, 0, stream>>>(words, boundNs);
  return cudaGetLastError();
}

} // namespace calibration
} // namespace overlap

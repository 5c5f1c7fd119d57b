//===- Kernels.cu - Pack/unpack, spin wait and signal kernels ---*- CUDA
//-*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The pack kernel follows the GPU MPI_Pack design (seed 003): one launch
// for the whole block, threads spread over the row, the rows and the
// planes (filling x, then y, then z), each thread moving the widest word
// that the row length, the strides and the addresses allow, with grid-
// stride loops so that any extent fits the grid limits.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include <cuda/atomic>

#include <algorithm>

namespace overlap {
namespace cuda {
namespace {

template <typename Word, bool Unpack>
__global__ void packKernel(const char *__restrict__ src, char *__restrict__ dst,
                           int64_t rowWords, int64_t n1, int64_t n0,
                           int64_t s1Bytes, int64_t s0Bytes) {
  const int64_t rowBytes = rowWords * int64_t(sizeof(Word));
  const int64_t x0 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t y0 = int64_t(blockIdx.y) * blockDim.y + threadIdx.y;
  const int64_t z0 = int64_t(blockIdx.z) * blockDim.z + threadIdx.z;
  const int64_t dx = int64_t(gridDim.x) * blockDim.x;
  const int64_t dy = int64_t(gridDim.y) * blockDim.y;
  const int64_t dz = int64_t(gridDim.z) * blockDim.z;
  for (int64_t z = z0; z < n0; z += dz)
    for (int64_t y = y0; y < n1; y += dy) {
      const int64_t strided = z * s0Bytes + y * s1Bytes;
      const int64_t packed = (z * n1 + y) * rowBytes;
      for (int64_t x = x0; x < rowWords; x += dx) {
        const int64_t off = x * int64_t(sizeof(Word));
        if (Unpack)
          *reinterpret_cast<Word *>(dst + strided + off) =
              *reinterpret_cast<const Word *>(src + packed + off);
        else
          *reinterpret_cast<Word *>(dst + packed + off) =
              *reinterpret_cast<const Word *>(src + strided + off);
      }
    }
}

__device__ __forceinline__ uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spinWaitKernel(uint32_t *flag, uint32_t epoch,
                               uint64_t budgetNs, SpinError *error, int stream,
                               int index) {
  ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_system> ref(*flag);
  const uint64_t start = globalTimerNs();
  unsigned sleepNs = 32;
  for (;;) {
    uint32_t seen = ref.load(::cuda::memory_order_acquire);
    // The cyclic comparison of cuStreamWaitValue32(GEQ): epochs may wrap.
    if (int32_t(seen - epoch) >= 0)
      return;
    if (globalTimerNs() - start > budgetNs) {
      ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_system> failed(
          error->failed);
      uint32_t expected = 0;
      // 0 -> 1 claims the record, 2 publishes it (the host reads the
      // fields only after seeing 2).
      if (failed.compare_exchange_strong(expected, 1u,
                                         ::cuda::memory_order_relaxed)) {
        error->stream = stream;
        error->flag = index;
        error->epoch = epoch;
        error->seen = seen;
        failed.store(2u, ::cuda::memory_order_release);
      }
      return; // give up: the host reports the error, the stream drains
    }
    __nanosleep(sleepNs);
    if (sleepNs < 2048)
      sleepNs *= 2;
  }
}

__global__ void signalStoreKernel(uint32_t *flag, uint32_t epoch) {
  ::cuda::atomic_ref<uint32_t, ::cuda::thread_scope_system> ref(*flag);
  ref.store(epoch, ::cuda::memory_order_release);
}

unsigned nextPow2(int64_t v, unsigned cap) {
  unsigned p = 1;
  while (p < cap && int64_t(p) < v)
    p *= 2;
  return p;
}

unsigned gridExtent(int64_t items, unsigned block, int64_t cap) {
  int64_t blocks = (items + block - 1) / block;
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(blocks, cap)));
}

template <typename Word>
cudaError_t launchWith(const PackShape &s, cudaStream_t stream) {
  const int64_t rowWords = s.n2 * s.elemBytes / int64_t(sizeof(Word));
  // 256 threads: x first (coalesced words of a row), then rows, then planes.
  const unsigned threads = 256;
  dim3 block;
  block.x = nextPow2(rowWords, threads);
  block.y = nextPow2(s.n1, threads / block.x);
  block.z = std::min(nextPow2(s.n0, threads / (block.x * block.y)), 64u);
  dim3 grid(gridExtent(rowWords, block.x, 0x7fffffff),
            gridExtent(s.n1, block.y, 65535), gridExtent(s.n0, block.z, 65535));
  const char *src = static_cast<const char *>(s.src);
  char *dst = static_cast<char *>(s.dst);
  const int64_t s1Bytes = s.s1 * s.elemBytes, s0Bytes = s.s0 * s.elemBytes;
  if (s.unpack)
    packKernel<Word, true><<<grid, block, 0, stream>>>(src, dst, rowWords, s.n1,
                                                       s.n0, s1Bytes, s0Bytes);
  else
    packKernel<Word, false><<<grid, block, 0, stream>>>(
        src, dst, rowWords, s.n1, s.n0, s1Bytes, s0Bytes);
  return cudaGetLastError();
}

} // namespace

int packWordBytes(const PackShape &s) {
  const uint64_t rowBytes = uint64_t(s.n2 * s.elemBytes);
  uint64_t bits = rowBytes | reinterpret_cast<uintptr_t>(s.src) |
                  reinterpret_cast<uintptr_t>(s.dst);
  // Strides only matter when there is more than one row / plane.
  if (s.n1 > 1)
    bits |= uint64_t(s.s1 * s.elemBytes);
  if (s.n0 > 1)
    bits |= uint64_t(s.s0 * s.elemBytes);
  for (int w = 16; w > 1; w /= 2)
    if (bits % uint64_t(w) == 0)
      return w;
  return 1;
}

cudaError_t launchPack(const PackShape &shape, cudaStream_t stream) {
  switch (packWordBytes(shape)) {
  case 16:
    return launchWith<uint4>(shape, stream);
  case 8:
    return launchWith<uint2>(shape, stream);
  case 4:
    return launchWith<uint32_t>(shape, stream);
  case 2:
    return launchWith<uint16_t>(shape, stream);
  default:
    return launchWith<uint8_t>(shape, stream);
  }
}

cudaError_t launchSpinWait(const uint32_t *flag, uint32_t epoch,
                           uint64_t budgetNs, SpinError *error, int stream,
                           int index, cudaStream_t cudaStream) {
  spinWaitKernel<<<1, 1, 0, cudaStream>>>(const_cast<uint32_t *>(flag), epoch,
                                          budgetNs, error, stream, index);
  return cudaGetLastError();
}

cudaError_t launchSignalStore(uint32_t *flag, uint32_t epoch,
                              cudaStream_t cudaStream) {
  signalStoreKernel<<<1, 1, 0, cudaStream>>>(flag, epoch);
  return cudaGetLastError();
}

} // namespace cuda
} // namespace overlap

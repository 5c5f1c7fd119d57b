//===- overlap-device-layer-check.cu - The device layer's stream order ----===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// What only a GPU shows about overlapDeviceLayerCall (overlap.jax.jit on
// GPUs): that it is ordered on the caller's stream and on nothing else. A
// bounded spin kernel holds the legacy default stream; the layer is called
// on a non-blocking stream (as XLA's are) and its outputs are read on that
// stream at once. A layer that copies with cudaMemcpy on the legacy stream
// gives the program stale inputs and the reader poisoned outputs (NaN);
// one that is stream-ordered on the caller's stream gives C = A·B.
//
//   overlap-device-layer-check PROGRAM.so
//
// PROGRAM: test/Tools/overlap-exec/Inputs/mrs1.mlir compiled with
// --target=cuda (@mrs: A 512x128, B 128x128, C 512x128 f32 -> 512x128 on
// one rank; C is zero, so the result is A·B either way C is used).
// Prints one line per call and "device layer check: passed" or exits 1
// naming what was wrong. test/Integration/device-layer-streams.test.
//
//===----------------------------------------------------------------------===//

#include "overlap-c/Export.h"
#include "overlap-c/Loader.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int M = 512, K = 128, N = 128;

/// Spins for `ns` nanoseconds of the global timer, then ends: the legacy
/// stream is busy that long, never longer.
__global__ void spin(uint64_t ns) {
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

bool ok(cudaError_t e, const char *what) {
  if (e == cudaSuccess)
    return true;
  std::fprintf(stderr, "overlap-device-layer-check: %s: %s (%s)\n", what,
               cudaGetErrorName(e), cudaGetErrorString(e));
  return false;
}

int fail(const char *why) {
  std::fprintf(stderr, "overlap-device-layer-check: %s\n", why);
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    return fail("usage: overlap-device-layer-check PROGRAM.so");
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("device layer check: skipped (no CUDA device)\n");
    return 0;
  }
  if (!ok(cudaSetDevice(0), "cudaSetDevice"))
    return 1;
  int status = 0;
  char *messages = nullptr;
  OverlapDeviceLayer *layer = overlapDeviceLayerCreate(
      argv[1], nullptr, 1, 0, 0, 0, 0, &status, &messages);
  if (!layer) {
    std::fprintf(stderr, "%s", messages ? messages : "no layer\n");
    overlapFree(messages);
    return 1;
  }
  const size_t aBytes = size_t(M) * K * 4, bBytes = size_t(K) * N * 4,
               cBytes = size_t(M) * N * 4;
  float *a, *b, *c, *out, *host;
  if (!ok(cudaMalloc(&a, aBytes), "cudaMalloc") ||
      !ok(cudaMalloc(&b, bBytes), "cudaMalloc") ||
      !ok(cudaMalloc(&c, cBytes), "cudaMalloc") ||
      !ok(cudaMalloc(&out, cBytes), "cudaMalloc") ||
      !ok(cudaMallocHost(&host, cBytes), "cudaMallocHost"))
    return 1;
  cudaStream_t caller;
  if (!ok(cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking),
          "cudaStreamCreateWithFlags"))
    return 1;
  int failures = 0;
  for (int call = 0; call < 2; ++call) {
    // Small integers: every product and sum is exact in f32 (and TF32).
    std::vector<float> ha(size_t(M) * K), hb(size_t(K) * N),
        hc(size_t(M) * N, 0.0f), want(size_t(M) * N, 0.0f);
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < K; ++k)
        ha[size_t(i) * K + k] = float((i + 2 * k + call) % 5 - 2);
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j)
        hb[size_t(k) * N + j] = float((3 * k + j + 2 * call) % 7 - 3);
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < K; ++k)
        for (int j = 0; j < N; ++j)
          want[size_t(i) * N + j] +=
              ha[size_t(i) * K + k] * hb[size_t(k) * N + j];
    if (!ok(cudaMemcpy(a, ha.data(), aBytes, cudaMemcpyHostToDevice), "a") ||
        !ok(cudaMemcpy(b, hb.data(), bBytes, cudaMemcpyHostToDevice), "b") ||
        !ok(cudaMemcpy(c, hc.data(), cBytes, cudaMemcpyHostToDevice), "c") ||
        !ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))
      return 1;
    // The outputs are NaN until the layer writes them (on `caller`).
    if (!ok(cudaMemsetAsync(out, 0xff, cBytes, caller), "cudaMemsetAsync"))
      return 1;
    // The legacy stream is held for 2 s (bounded: the kernel ends then).
    spin<<<1, 1>>>(2000000000ull);
    if (!ok(cudaGetLastError(), "spin kernel launch"))
      return 1;
    const void *inputs[] = {a, b, c};
    void *outputs[] = {out};
    const size_t inputBytes[] = {aBytes, bBytes, cBytes};
    const size_t outputBytes[] = {cBytes};
    if (overlapDeviceLayerCall(layer, caller, inputs, inputBytes, 3, outputs,
                               outputBytes, 1, &messages)) {
      std::fprintf(stderr, "%s", messages ? messages : "call failed\n");
      overlapFree(messages);
      return 1;
    }
    // Read at once, on the caller's stream only.
    if (!ok(cudaMemcpyAsync(host, out, cBytes, cudaMemcpyDeviceToHost, caller),
            "cudaMemcpyAsync (outputs)") ||
        !ok(cudaStreamSynchronize(caller), "cudaStreamSynchronize"))
      return 1;
    bool held = cudaStreamQuery(0) == cudaErrorNotReady;
    size_t wrong = 0;
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      double e = std::fabs(double(host[i]) - want[i]);
      if (!(e <= 1e-3)) {
        ++wrong;
        worst = std::isnan(e) ? NAN : std::fmax(worst, e);
      }
    }
    std::printf("call %d: %zu of %zu outputs wrong (worst error %g), legacy "
                "stream %s when they were read\n",
                call, wrong, want.size(), worst,
                held ? "still held" : "already free");
    failures += wrong != 0;
    // The first call must have been read while the spin still held the
    // legacy stream, or the check proved nothing.
    if (call == 0 && !held)
      failures += fail("the legacy stream was free before the outputs were "
                       "read: the layer call waited for it (a synchronous "
                       "call on the legacy stream?)");
    if (!ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize (spin)"))
      return 1;
  }
  overlapDeviceLayerDestroy(layer);
  cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(out), cudaFreeHost(host);
  cudaStreamDestroy(caller);
  if (failures)
    return fail("device layer check: FAILED");
  std::printf("device layer check: passed\n");
  return 0;
}

//===- CudaTestSupport.h - Shared by the CUDA backend's tests ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The mgpu* entry points as the tests call them (CUDA handles as void *),
// and the fixture base of tests that need a GPU: they skip, saying why,
// where cudaGetDeviceCount finds none.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_UNITTESTS_RUNTIME_CUDATESTSUPPORT_H
#define OVERLAP_UNITTESTS_RUNTIME_CUDATESTSUPPORT_H

#include "overlap/Runtime/overlap_runtime_cuda.h"

#include "gtest/gtest.h"

#include <cstddef>
#include <cstdint>

extern "C" {
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuStreamSynchronize(void *stream);
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *stream);
void *mgpuModuleLoad(void *data, size_t size);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
}

namespace overlap {
namespace test {

/// Base of the fixtures whose tests need a CUDA device.
class NeedsCudaDevice : public ::testing::Test {
protected:
  void SetUp() override {
    const char *why = nullptr;
    if (overlap_cuda_device_count(&why) == 0)
      GTEST_SKIP() << "no CUDA device (" << (why ? why : "")
                   << "); run scripts/gpu/run.sh on a GPU machine";
  }
};

} // namespace test
} // namespace overlap

#endif // OVERLAP_UNITTESTS_RUNTIME_CUDATESTSUPPORT_H

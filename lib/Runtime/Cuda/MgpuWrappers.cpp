//===- MgpuWrappers.cpp - The mgpu* calls of the GPU lowering -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Upstream's gpu-to-llvm lowering (and the gpu.binary launch translation)
// emits calls to mgpu* functions that libmlir_cuda_runtime provides; Debian
// ships no such library, so this one does. Signatures follow MLIR 22's
// callers (GPUToLLVMConversion.cpp, SelectObjectAttr.cpp); the bodies are
// our own, on the CUDA driver API. The functions return no status (their
// callers expect none): a failure is printed with the call's name and the
// error, and the returned handle is null. A kernel launch that fails on a
// stream of an Overlap context is recorded in that context's sticky status
// instead, naming the kernel, so that the program's next synchronize
// reports it (and every later runtime call fails fast).
//
// Kernels of a compiled Overlap program run on the context's streams: the
// program passes overlap_cuda_stream(ctx, i) as the `stream` argument.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"
#include "Driver.h"

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <utility>
#include <vector>

#define MGPU_EXPORT extern "C" __attribute__((visibility("default")))

using overlap::cuda::driver;

namespace {

thread_local int32_t defaultDevice = 0;

bool report(CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return true;
  const char *name = nullptr;
  driver().cuGetErrorName(result, &name);
  std::fprintf(stderr, "overlap mgpu: %s failed: %s%s\n", call,
               name ? name : "unknown CUresult",
               overlap::cuda::driverError().empty()
                   ? ""
                   : (" (" + overlap::cuda::driverError() + ")").c_str());
  return false;
}

/// Makes a context current on this thread if none is: the primary context
/// of the default device (the one the CUDA runtime, and so the Overlap
/// context, uses). An existing current context is left alone.
bool ensureContext() {
  CUcontext current = nullptr;
  if (driver().cuCtxGetCurrent(&current) == CUDA_SUCCESS && current)
    return true;
  if (!report(driver().cuInit(0), "cuInit"))
    return false;
  CUdevice device;
  if (!report(driver().cuDeviceGet(&device, defaultDevice), "cuDeviceGet"))
    return false;
  CUcontext primary = nullptr;
  if (!report(driver().cuDevicePrimaryCtxRetain(&primary, device),
              "cuDevicePrimaryCtxRetain"))
    return false;
  return report(driver().cuCtxSetCurrent(primary), "cuCtxSetCurrent");
}

/// The leading part of a ranked memref descriptor (MLIR's
/// StridedMemRefType): sizes and strides follow `offset`.
struct MemRefPrefix {
  char *allocated;
  char *aligned;
  int64_t offset;
  // Then sizes[rank] and strides[rank].
  const int64_t *sizes() const { return &offset + 1; }
};

} // namespace

namespace {

/// A module of a compiled program, loaded lazily, once per context. The
/// gpu.binary translation loads every module in a global constructor, that
/// is when the program's library is loaded: before the caller has created
/// its Overlap context or made its device current, so loading there would
/// put the kernels in device 0's primary context whatever device the
/// program runs on (and initialize CUDA in processes that never launch a
/// kernel). The image is a constant of the loaded library, valid until
/// mgpuModuleUnload (its destructor).
struct LazyModule {
  const void *image;
  int optLevel; // -1: cuModuleLoadData; else cuModuleLoadDataEx (JIT)
  std::mutex mutex;
  std::vector<std::pair<CUcontext, CUmodule>> loaded;

  /// The module in the current context, loaded on first use there.
  CUmodule get() {
    if (!ensureContext())
      return nullptr;
    CUcontext context = nullptr;
    if (!report(driver().cuCtxGetCurrent(&context), "cuCtxGetCurrent"))
      return nullptr;
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &[ctx, module] : loaded)
      if (ctx == context)
        return module;
    CUmodule module = nullptr;
    if (optLevel < 0) {
      report(driver().cuModuleLoadData(&module, image), "cuModuleLoadData");
    } else {
      CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL};
      void *values[] = {reinterpret_cast<void *>(intptr_t(optLevel))};
      report(driver().cuModuleLoadDataEx(&module, image, 1, options, values),
             "cuModuleLoadDataEx");
    }
    if (module)
      loaded.emplace_back(context, module);
    return module;
  }
};

CUmodule lazyHandle(const void *image, int optLevel) {
  if (!image)
    return nullptr;
  auto *lazy = new LazyModule;
  lazy->image = image;
  lazy->optLevel = optLevel;
  return reinterpret_cast<CUmodule>(lazy);
}

} // namespace

MGPU_EXPORT CUmodule mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  return lazyHandle(data, -1);
}

MGPU_EXPORT CUmodule mgpuModuleLoadJIT(void *data, int optLevel) {
  return lazyHandle(data, optLevel < 0 ? 0 : optLevel);
}

MGPU_EXPORT void mgpuModuleUnload(CUmodule handle) {
  auto *lazy = reinterpret_cast<LazyModule *>(handle);
  if (!lazy)
    return;
  // Unloading needs the context the module lives in; a context already
  // destroyed took its modules with it (the call then fails harmlessly,
  // and is not reported: this runs in the library's destructor).
  for (auto &[context, module] : lazy->loaded) {
    CUcontext previous = nullptr;
    driver().cuCtxGetCurrent(&previous);
    if (driver().cuCtxSetCurrent(context) == CUDA_SUCCESS)
      driver().cuModuleUnload(module);
    driver().cuCtxSetCurrent(previous);
  }
  delete lazy;
}

MGPU_EXPORT CUfunction mgpuModuleGetFunction(CUmodule handle,
                                             const char *name) {
  auto *lazy = reinterpret_cast<LazyModule *>(handle);
  CUfunction function = nullptr;
  CUmodule module = lazy ? lazy->get() : nullptr;
  if (module)
    report(driver().cuModuleGetFunction(&function, module, name),
           "cuModuleGetFunction");
  return function;
}

MGPU_EXPORT void mgpuLaunchKernel(CUfunction function, intptr_t gridX,
                                  intptr_t gridY, intptr_t gridZ,
                                  intptr_t blockX, intptr_t blockY,
                                  intptr_t blockZ, int32_t smem,
                                  CUstream stream, void **params, void **extra,
                                  size_t /*paramsCount*/) {
  auto failed = [&](const std::string &error) {
    const char *name = nullptr;
    if (!function ||
        driver().cuFuncGetName(&name, function) != CUDA_SUCCESS || !name)
      name = "(unknown)";
    if (!overlap::cuda::recordLaunchFailure(stream, name, error))
      std::fprintf(stderr, "overlap mgpu: mgpuLaunchKernel of '%s': %s\n",
                   name, error.c_str());
  };
  if (!function) {
    failed("null function (its module failed to load or the kernel was not "
           "found; see the message of mgpuModuleGetFunction)");
    return;
  }
  if (!ensureContext()) {
    failed("no CUDA context");
    return;
  }
  if (smem > 48 * 1024) {
    CUresult r = driver().cuFuncSetAttribute(
        function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem);
    if (r != CUDA_SUCCESS) {
      failed("cuFuncSetAttribute failed: " + overlap::cuda::describe(r));
      return;
    }
  }
  CUresult r = driver().cuLaunchKernel(
      function, unsigned(gridX), unsigned(gridY), unsigned(gridZ),
      unsigned(blockX), unsigned(blockY), unsigned(blockZ), unsigned(smem),
      stream, params, extra);
  if (r != CUDA_SUCCESS)
    failed("cuLaunchKernel failed: " + overlap::cuda::describe(r));
}

MGPU_EXPORT CUstream mgpuStreamCreate() {
  CUstream stream = nullptr;
  if (ensureContext())
    report(driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
           "cuStreamCreate");
  return stream;
}

MGPU_EXPORT void mgpuStreamDestroy(CUstream stream) {
  report(driver().cuStreamDestroy(stream), "cuStreamDestroy");
}

MGPU_EXPORT void mgpuStreamSynchronize(CUstream stream) {
  report(driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
}

MGPU_EXPORT void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  report(driver().cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
}

MGPU_EXPORT CUevent mgpuEventCreate() {
  CUevent event = nullptr;
  if (ensureContext())
    report(driver().cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
           "cuEventCreate");
  return event;
}

MGPU_EXPORT void mgpuEventDestroy(CUevent event) {
  report(driver().cuEventDestroy(event), "cuEventDestroy");
}

MGPU_EXPORT void mgpuEventSynchronize(CUevent event) {
  report(driver().cuEventSynchronize(event), "cuEventSynchronize");
}

MGPU_EXPORT void mgpuEventRecord(CUevent event, CUstream stream) {
  report(driver().cuEventRecord(event, stream), "cuEventRecord");
}

MGPU_EXPORT void *mgpuMemAlloc(uint64_t sizeBytes, CUstream /*stream*/,
                               bool isHostShared) {
  if (!sizeBytes || !ensureContext())
    return nullptr;
  CUdeviceptr ptr = 0;
  if (isHostShared)
    report(driver().cuMemAllocManaged(&ptr, sizeBytes, CU_MEM_ATTACH_GLOBAL),
           "cuMemAllocManaged");
  else
    report(driver().cuMemAlloc(&ptr, sizeBytes), "cuMemAlloc");
  return reinterpret_cast<void *>(ptr);
}

MGPU_EXPORT void mgpuMemFree(void *ptr, CUstream /*stream*/) {
  if (ptr)
    report(driver().cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
}

MGPU_EXPORT void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                            CUstream stream) {
  report(driver().cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                                reinterpret_cast<CUdeviceptr>(src), sizeBytes,
                                stream),
         "cuMemcpyAsync");
}

MGPU_EXPORT void mgpuMemset32(void *dst, unsigned int value, size_t count,
                              CUstream stream) {
  report(driver().cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                   count, stream),
         "cuMemsetD32Async");
}

MGPU_EXPORT void mgpuMemset16(void *dst, unsigned short value, size_t count,
                              CUstream stream) {
  report(driver().cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                   count, stream),
         "cuMemsetD16Async");
}

MGPU_EXPORT void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  if (ensureContext())
    report(driver().cuMemHostRegister(ptr, sizeBytes, 0), "cuMemHostRegister");
}

MGPU_EXPORT void mgpuMemHostUnregister(void *ptr) {
  if (ensureContext())
    report(driver().cuMemHostUnregister(ptr), "cuMemHostUnregister");
}

/// Registers a dense memref's data (upstream only supports dense ones).
MGPU_EXPORT void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                                           int64_t elementSizeBytes) {
  auto *d = static_cast<MemRefPrefix *>(descriptor);
  int64_t elements = 1;
  for (int64_t i = 0; i < rank; ++i)
    elements *= d->sizes()[i];
  mgpuMemHostRegister(d->aligned + d->offset * elementSizeBytes,
                      uint64_t(elements * elementSizeBytes));
}

MGPU_EXPORT void mgpuMemHostUnregisterMemRef(int64_t /*rank*/, void *descriptor,
                                             int64_t elementSizeBytes) {
  auto *d = static_cast<MemRefPrefix *>(descriptor);
  mgpuMemHostUnregister(d->aligned + d->offset * elementSizeBytes);
}

MGPU_EXPORT void mgpuSetDefaultDevice(int32_t device) {
  defaultDevice = device;
}

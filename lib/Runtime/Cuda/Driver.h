//===- Driver.h - CUDA driver entry points, found at run time ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The backend calls a few driver functions (stream memory operations, and
// everything behind the mgpu* wrappers). Linking libcuda.so.1 would make the
// library fail to load on machines without a driver, where the tests must
// still run (and skip); so the driver functions are looked up through the
// CUDA runtime (cudaGetDriverEntryPointByVersion), which loads the driver
// lazily and reports its absence as an ordinary error.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_CUDA_DRIVER_H
#define OVERLAP_LIB_RUNTIME_CUDA_DRIVER_H

#include <cuda.h>

#include <string>

namespace overlap {
namespace cuda {

// The names as the headers spell them; cuda.h maps some to versioned
// symbols (cuMemAlloc -> cuMemAlloc_v2), and the lookup asks for the
// version of the headers we compile against, so the types match.
#define OVERLAP_DRIVER_FUNCTIONS(X)                                            \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuInit)                                                                    \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxSetCurrent)                                                           \
  X(cuDeviceGet)                                                               \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuModuleLoadData)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncGetName)                                                             \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuStreamWriteValue32)                                                      \
  X(cuStreamWaitValue32)                                                       \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventSynchronize)                                                        \
  X(cuEventRecord)                                                             \
  X(cuMemAlloc)                                                                \
  X(cuMemAllocManaged)                                                         \
  X(cuMemFree)                                                                 \
  X(cuMemcpyAsync)                                                             \
  X(cuMemsetD32Async)                                                          \
  X(cuMemsetD16Async)                                                          \
  X(cuMemHostRegister)                                                         \
  X(cuMemHostUnregister)

struct DriverApi {
#define OVERLAP_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  OVERLAP_DRIVER_FUNCTIONS(OVERLAP_DRIVER_MEMBER)
#undef OVERLAP_DRIVER_MEMBER
};

/// The driver's functions, looked up once. When the driver (or one of the
/// functions) is missing, every function of the table returns
/// CUDA_ERROR_NOT_INITIALIZED and driverError() says why.
const DriverApi &driver();
/// "" when the driver was found, else why not.
const std::string &driverError();

} // namespace cuda
} // namespace overlap

#endif // OVERLAP_LIB_RUNTIME_CUDA_DRIVER_H

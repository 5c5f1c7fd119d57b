//===- Driver.cpp - CUDA driver entry points, found at run time -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <cuda_runtime.h>

using namespace overlap::cuda;

namespace {

/// Stand-in for a driver function that could not be found.
template <typename F> struct Missing;
template <typename... A> struct Missing<CUresult (*)(A...)> {
  static CUresult fn(A...) { return CUDA_ERROR_NOT_INITIALIZED; }
};

template <typename F> bool lookup(const char *name, F &fn, std::string &error) {
  void *ptr = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &ptr, CUDA_VERSION,
                                                   cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !ptr) {
    (void)cudaGetLastError();
    if (error.empty())
      error = std::string("cannot find the CUDA driver function ") + name +
              (e != cudaSuccess ? std::string(": ") + cudaGetErrorName(e) +
                                      " (" + cudaGetErrorString(e) + ")"
                                : std::string(" (query result ") +
                                      std::to_string(int(found)) + ")");
    fn = &Missing<F>::fn;
    return false;
  }
  fn = reinterpret_cast<F>(ptr);
  return true;
}

struct Loaded {
  DriverApi api;
  std::string error;
  Loaded() {
#define OVERLAP_DRIVER_LOOKUP(name) lookup(#name, api.name, error);
    OVERLAP_DRIVER_FUNCTIONS(OVERLAP_DRIVER_LOOKUP)
#undef OVERLAP_DRIVER_LOOKUP
  }
};

const Loaded &loaded() {
  static Loaded table; // thread-safe initialization
  return table;
}

} // namespace

const DriverApi &overlap::cuda::driver() { return loaded().api; }
const std::string &overlap::cuda::driverError() { return loaded().error; }

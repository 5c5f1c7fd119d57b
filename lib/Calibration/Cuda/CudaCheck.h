//===- CudaCheck.h - CUDA runtime errors end the tool ----------*- C++ -*-===//
//
// Part of the Overlap project. Private to lib/Calibration/Cuda.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_CALIBRATION_CUDA_CUDACHECK_H
#define OVERLAP_LIB_CALIBRATION_CUDA_CUDACHECK_H

#include <cuda_runtime.h>

namespace overlap {
namespace calibration {

/// Exits 1 (after destroying the tool's context) when `e` is an error,
/// naming the call.
void checkCuda(cudaError_t e, const char *what);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_LIB_CALIBRATION_CUDA_CUDACHECK_H

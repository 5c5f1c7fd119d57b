//===- Kernels.h - The backend's own CUDA kernels --------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Launchers of the kernels in Kernels.cu (pack/unpack, spin wait, signal
// store). Plain C++ so that the host-compiled files need no nvcc.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_CUDA_KERNELS_H
#define OVERLAP_LIB_RUNTIME_CUDA_KERNELS_H

#include "Context.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace overlap {
namespace cuda {

/// The error record of the spin-wait kernels (mapped host memory): the
/// first wait that gave up fills it.
struct SpinError {
  uint32_t failed; // 0 until a spin wait gives up
  int32_t stream;
  int32_t flag;
  uint32_t epoch;
  uint32_t seen;
};

/// A strided block of n0 x n1 x n2 elements of `elemBytes` bytes (strides
/// s0, s1 in elements) and its packed copy; see overlap_pack.
using PackShape = runtime::PackArgs;

/// The widest access (16, 8, 4, 2 or 1 bytes) that divides the row length,
/// both strides and both base addresses in bytes.
int packWordBytes(const PackShape &shape);

/// One kernel for the whole block, `packWordBytes` bytes per access.
cudaError_t launchPack(const PackShape &shape, cudaStream_t stream);

/// One thread polls `flag` (acquire, system scope) until it reaches `epoch`
/// in the cyclic order of cuStreamWaitValue32's GEQ; after `budgetNs` it
/// fills `error` (if still empty) and returns, so the stream never hangs.
cudaError_t launchSpinWait(const uint32_t *flag, uint32_t epoch,
                           uint64_t budgetNs, SpinError *error, int stream,
                           int index, cudaStream_t cudaStream);

/// One thread stores `epoch` into `flag` with release semantics (system
/// scope), after all earlier work of the stream.
cudaError_t launchSignalStore(uint32_t *flag, uint32_t epoch,
                              cudaStream_t cudaStream);

} // namespace cuda
} // namespace overlap

#endif // OVERLAP_LIB_RUNTIME_CUDA_KERNELS_H

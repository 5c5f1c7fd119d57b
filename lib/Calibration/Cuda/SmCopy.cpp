//===- SmCopy.cpp - The sm-copy leg's copies --------------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "SmCopy.h"

#include "overlap/Calibration/MeasuringContext.h"
#include "overlap/Calibration/StandIn.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"

#include "CudaCheck.h"

#include <cstdint>
#include <cstdio>

using namespace overlap;
using namespace overlap::calibration;

static_assert(kSmCopyKernelThreads == kSmCopyThreads,
              "the kernel's blocks must be those smCopyBlocks plans");

void calibration::smCopy(overlap_context *ctx, int stream, void *dst,
                         const void *src, size_t bytes, int ctas) {
  if (bytes == 0)
    return;
  auto *cudaStream =
      static_cast<cudaStream_t>(overlap_cuda_stream(ctx, stream));
  if (!cudaStream) {
    printDiagnostic("error", "sm-copy: the context has no stream %d\n", stream);
    leave(1);
  }
  const unsigned word = copyWordBytes(reinterpret_cast<uintptr_t>(dst),
                                      reinterpret_cast<uintptr_t>(src), bytes);
  checkCuda(launchSmCopyKernel(dst, src, bytes, word,
                               smCopyBlocks(ctas, bytes, word), cudaStream),
            "the sm-copy kernel's launch");
}

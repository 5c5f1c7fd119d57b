//===- CudaLayerOrder.h - A device layer's copies on the caller's stream -===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA runtime functions the CUDA executor and the device layer call
// (a table bound from the runtime's handle: the loader links no CUDA
// library), and the stream order of one device-layer call on a
// framework's stream (overlap.jax.jit on GPUs: XLA's stream):
//
//   caller:   [copies in] record(in) .................. wait(done_i) [copies
//   out] record(out) stream i:                        wait(in) [program]
//   record(done_i)
//
// XLA's streams and the context's are non-blocking: neither is ordered
// with the legacy default stream, so every copy is a cudaMemcpyAsync on
// the caller's stream and the two sides wait for each other's events.
// Only with CUDA (OVERLAP_HAVE_CUDA); a test fakes the table
// (unittests/Loader/CudaLayerOrderTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_LOADER_CUDALAYERORDER_H
#define OVERLAP_LIB_LOADER_CUDALAYERORDER_H

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace overlap {
namespace exec {

#define OVERLAP_CUDART_FUNCTIONS(X)                                            \
  X(cudaMemsetAsync)                                                           \
  X(cudaStreamSynchronize)                                                     \
  X(cudaGetLastError)                                                          \
  X(cudaPointerGetAttributes)                                                  \
  X(cudaFree)                                                                  \
  X(cudaFreeHost)                                                              \
  X(cudaGetErrorName)                                                          \
  X(cudaGetErrorString)                                                        \
  X(cudaStreamDestroy)                                                         \
  X(cudaGetDeviceProperties)                                                   \
  X(cudaMemcpy)                                                                \
  X(cudaMemcpyAsync)                                                           \
  X(cudaDeviceSynchronize)                                                     \
  X(cudaStreamCreateWithFlags)                                                 \
  X(cudaEventCreateWithFlags)                                                  \
  X(cudaEventRecord)                                                           \
  X(cudaEventSynchronize)                                                      \
  X(cudaEventDestroy)                                                          \
  X(cudaStreamWaitEvent)

/// One pointer per CUDA runtime function of OVERLAP_CUDART_FUNCTIONS.
struct CudaRt {
#define OVERLAP_CUDART_MEMBER(NAME) decltype(&::NAME) NAME = nullptr;
  OVERLAP_CUDART_FUNCTIONS(OVERLAP_CUDART_MEMBER)
#undef OVERLAP_CUDART_MEMBER
  /// MgpuWrappers.cpp in liboverlap_runtime_cuda.so.
  void *(*mgpuMemAlloc)(uint64_t, void *, bool) = nullptr;
};

namespace layer_order {

/// One device-to-device copy of a call, `what` naming it in errors.
struct Copy {
  void *dst;
  const void *src;
  size_t bytes;
  std::string what;
};

/// The events of one layer (made once, with cudaEventDisableTiming):
/// `inputsIn` after the input copies on the caller's stream,
/// `programDone[i]` after the program's work on the context's stream i,
/// `outputsOut` after the output copies on the caller's stream.
struct Events {
  cudaEvent_t inputsIn = nullptr;
  std::vector<cudaEvent_t> programDone;
  cudaEvent_t outputsOut = nullptr;
  /// Set once `outputsOut` is recorded, until waitCopiesOut.
  bool outputsPending = false;
};

/// Makes `events` for `programStreams` streams; false with `error`.
bool createEvents(const CudaRt &cu, size_t programStreams, Events &events,
                  std::string &error);
/// Destroys what createEvents made (after waitCopiesOut).
void destroyEvents(const CudaRt &cu, Events &events);

/// The host waits for the last call's output copies (if any): the
/// results they read are freed next, and a free (cudaFree of pool or
/// device memory) is not ordered with the caller's stream. The copies came
/// after the program, which the host already waited for, so this waits
/// only for them (and the caller's work before them).
bool waitCopiesOut(const CudaRt &cu, Events &events, std::string &error);

/// Enqueues `inputs` on `caller`, then orders every stream of `program`
/// after them (and after all the caller's work before the call: what
/// produced the inputs).
bool copyIn(const CudaRt &cu, cudaStream_t caller,
            const std::vector<cudaStream_t> &program, Events &events,
            const std::vector<Copy> &inputs, std::string &error);

/// Orders `caller` after everything enqueued so far on `program`'s
/// streams, then enqueues `outputs` on `caller` and records `outputsOut`:
/// work the caller enqueues next reads the outputs after they landed.
bool copyOut(const CudaRt &cu, cudaStream_t caller,
             const std::vector<cudaStream_t> &program, Events &events,
             const std::vector<Copy> &outputs, std::string &error);

} // namespace layer_order
} // namespace exec
} // namespace overlap

#endif // OVERLAP_LIB_LOADER_CUDALAYERORDER_H

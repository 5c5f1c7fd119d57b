//===- CudaLayerOrder.cpp - A device layer's copies on the caller's stream ===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "CudaLayerOrder.h"

namespace overlap {
namespace exec {
namespace layer_order {

namespace {
bool failed(const CudaRt &cu, const std::string &what, cudaError_t e,
            std::string &error) {
  error = what + ": " + cu.cudaGetErrorName(e) + " (" +
          cu.cudaGetErrorString(e) + ")";
  return false;
}

bool copies(const CudaRt &cu, cudaStream_t caller,
            const std::vector<Copy> &list, std::string &error) {
  for (const Copy &c : list)
    if (cudaError_t e = cu.cudaMemcpyAsync(c.dst, c.src, c.bytes,
                                           cudaMemcpyDeviceToDevice, caller))
      return failed(cu, "cudaMemcpyAsync (" + c.what + ")", e, error);
  return true;
}
} // namespace

bool createEvents(const CudaRt &cu, size_t programStreams, Events &events,
                  std::string &error) {
  events.programDone.assign(programStreams, nullptr);
  auto make = [&](cudaEvent_t &event) {
    cudaError_t e = cu.cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (e != cudaSuccess)
      event = nullptr;
    return e == cudaSuccess || failed(cu, "cudaEventCreateWithFlags", e, error);
  };
  if (!make(events.inputsIn) || !make(events.outputsOut))
    return false;
  for (cudaEvent_t &event : events.programDone)
    if (!make(event))
      return false;
  return true;
}

void destroyEvents(const CudaRt &cu, Events &events) {
  auto destroy = [&](cudaEvent_t &event) {
    if (event)
      (void)cu.cudaEventDestroy(event);
    event = nullptr;
  };
  destroy(events.inputsIn);
  destroy(events.outputsOut);
  for (cudaEvent_t &event : events.programDone)
    destroy(event);
  events.outputsPending = false;
}

bool waitCopiesOut(const CudaRt &cu, Events &events, std::string &error) {
  if (!events.outputsPending)
    return true;
  events.outputsPending = false;
  if (cudaError_t e = cu.cudaEventSynchronize(events.outputsOut))
    return failed(cu, "cudaEventSynchronize (the last call's copies out)", e,
                  error);
  return true;
}

bool copyIn(const CudaRt &cu, cudaStream_t caller,
            const std::vector<cudaStream_t> &program, Events &events,
            const std::vector<Copy> &inputs, std::string &error) {
  if (!copies(cu, caller, inputs, error))
    return false;
  if (cudaError_t e = cu.cudaEventRecord(events.inputsIn, caller))
    return failed(cu, "cudaEventRecord on the caller's stream", e, error);
  for (size_t i = 0; i < program.size(); ++i)
    if (cudaError_t e = cu.cudaStreamWaitEvent(program[i], events.inputsIn, 0))
      return failed(cu,
                    "cudaStreamWaitEvent (stream " + std::to_string(i) +
                        " for the inputs)",
                    e, error);
  return true;
}

bool copyOut(const CudaRt &cu, cudaStream_t caller,
             const std::vector<cudaStream_t> &program, Events &events,
             const std::vector<Copy> &outputs, std::string &error) {
  if (events.programDone.size() < program.size()) {
    error = "the layer has events for " +
            std::to_string(events.programDone.size()) + " streams, not " +
            std::to_string(program.size());
    return false;
  }
  for (size_t i = 0; i < program.size(); ++i)
    if (cudaError_t e = cu.cudaEventRecord(events.programDone[i], program[i]))
      return failed(cu, "cudaEventRecord on stream " + std::to_string(i), e,
                    error);
  for (size_t i = 0; i < program.size(); ++i)
    if (cudaError_t e =
            cu.cudaStreamWaitEvent(caller, events.programDone[i], 0))
      return failed(cu,
                    "cudaStreamWaitEvent (the caller's stream for stream " +
                        std::to_string(i) + ")",
                    e, error);
  if (!copies(cu, caller, outputs, error))
    return false;
  if (cudaError_t e = cu.cudaEventRecord(events.outputsOut, caller))
    return failed(cu, "cudaEventRecord after the copies out", e, error);
  events.outputsPending = true;
  return true;
}

} // namespace layer_order
} // namespace exec
} // namespace overlap

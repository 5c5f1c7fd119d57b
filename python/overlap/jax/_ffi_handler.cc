// The XLA FFI handler of an Overlap layer called from JAX (overlap.jax.jit;
// docs/jax.md, "Calling Overlap from JAX"). Built on first use by
// overlap/jax/_ffi.py against the FFI headers jaxlib ships
// (jax.ffi.include_dir()); it links nothing: the host C API's
// overlapStepCall (libOverlapHostCAPI.so, lib/Loader/StepRendezvous.cpp)
// comes in as an attribute holding its address, with the layer's step.
//
// One call per device and step: operand 0 is the device's rank (an int32
// scalar, jax.lax.axis_index over the mesh axes in order), the others are
// its shards of the layer's arguments; the results are its blocks of the
// layer's results.
// - OverlapLayer (CPU): the call blocks until every device of the step
//   came and the program ran once on all of them (host ranks).
// - OverlapLayerCuda (GPU, one process and GPU per rank): the handler gets
//   XLA's stream and calls overlapDeviceLayerCall (the --target=cuda
//   program on this process's GPU); the rank operand is not read (it is
//   in device memory, and the process's rank is the layer's). Compiled,
//   not yet run on a GPU.

#include "xla/ffi/api/ffi.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace ffi = xla::ffi;

namespace {

using StepCall = int (*)(void *step, int rank, const void *const *inputs,
                         size_t numInputs, void *const *outputs,
                         size_t numOutputs, char **messages);
using FreeFn = void (*)(void *);

/// The data pointers of the call's operands (after the rank) and results.
ffi::Error buffers(const ffi::RemainingArgs &args,
                   const ffi::RemainingRets &rets,
                   std::vector<const void *> &inputs,
                   std::vector<void *> &outputs) {
  for (size_t i = 0; i < args.size(); ++i) {
    auto arg = args.get<ffi::AnyBuffer>(i);
    if (!arg.has_value())
      return arg.error();
    inputs.push_back(arg->untyped_data());
  }
  for (size_t i = 0; i < rets.size(); ++i) {
    auto ret = rets.get<ffi::AnyBuffer>(i);
    if (!ret.has_value())
      return ret.error();
    outputs.push_back((*ret)->untyped_data());
  }
  return ffi::Error::Success();
}

/// The common part of both handlers: refuses a call with no layer (with
/// the message `noLayer`), gathers the buffers, runs `invoke(step, inputs,
/// outputs, &messages)` and turns a non-zero status into an error that
/// carries the messages (released through `release`).
template <typename Invoke>
ffi::Error callLayer(int64_t step, int64_t call, int64_t release,
                     const char *noLayer, const ffi::RemainingArgs &args,
                     const ffi::RemainingRets &rets, Invoke invoke) {
  if (!step || !call || !release)
    return ffi::Error::InvalidArgument(noLayer);
  std::vector<const void *> inputs;
  std::vector<void *> outputs;
  if (ffi::Error error = buffers(args, rets, inputs, outputs); error.failure())
    return error;
  char *messages = nullptr;
  int status =
      invoke(reinterpret_cast<void *>(step), inputs, outputs, &messages);
  std::string text = messages ? messages : "";
  reinterpret_cast<FreeFn>(release)(messages);
  if (status != 0)
    return ffi::Error::Internal("overlap_layer: " + text);
  return ffi::Error::Success();
}

ffi::Error OverlapLayerImpl(int64_t step, int64_t call, int64_t release,
                            ffi::Buffer<ffi::S32> rank, ffi::RemainingArgs args,
                            ffi::RemainingRets rets) {
  return callLayer(
      step, call, release,
      "overlap_layer: no step (the layer was not made by overlap.jax.jit)",
      args, rets,
      [&](void *layer, std::vector<const void *> &inputs,
          std::vector<void *> &outputs, char **messages) {
        return reinterpret_cast<StepCall>(call)(
            layer, rank.typed_data()[0], inputs.data(), inputs.size(),
            outputs.data(), outputs.size(), messages);
      });
}

using DeviceCall = int (*)(void *layer, void *stream, const void *const *inputs,
                           size_t numInputs, void *const *outputs,
                           size_t numOutputs, char **messages);

ffi::Error OverlapLayerCudaImpl(void *stream, int64_t step, int64_t call,
                                int64_t release, ffi::AnyBuffer /*rank*/,
                                ffi::RemainingArgs args,
                                ffi::RemainingRets rets) {
  return callLayer(
      step, call, release,
      "overlap_layer: no layer (it was not made by overlap.jax.jit)", args,
      rets,
      [&](void *layer, std::vector<const void *> &inputs,
          std::vector<void *> &outputs, char **messages) {
        return reinterpret_cast<DeviceCall>(call)(layer, stream, inputs.data(),
                                                  inputs.size(), outputs.data(),
                                                  outputs.size(), messages);
      });
}

} // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(OverlapLayerCuda, OverlapLayerCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<void *>>()
                                  .Attr<int64_t>("step")
                                  .Attr<int64_t>("call")
                                  .Attr<int64_t>("release")
                                  .Arg<ffi::AnyBuffer>()
                                  .RemainingArgs()
                                  .RemainingRets());

XLA_FFI_DEFINE_HANDLER_SYMBOL(OverlapLayer, OverlapLayerImpl,
                              ffi::Ffi::Bind()
                                  .Attr<int64_t>("step")
                                  .Attr<int64_t>("call")
                                  .Attr<int64_t>("release")
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .RemainingArgs()
                                  .RemainingRets());

// The XLA FFI handler of an Overlap layer called from JAX (overlap.jax.jit;
// docs/jax.md, "Calling Overlap from JAX"). Built on first use by
// overlap/jax/_ffi.py against the FFI headers jaxlib ships
// (jax.ffi.include_dir()); it links nothing.
//
// The layers it runs are registered here, not named by the program: the
// only attribute of a call is `layer`, an unpredictable 64-bit id that
// OverlapLayerRegister handed out for a layer overlap.jax.jit made (its
// step, and the host C API's call, free and destroy functions:
// libOverlapHostCAPI.so, lib/CAPI/Host.cpp). An XLA program that names
// the target with an id that is not (or no longer) registered gets an
// error and nothing is called; no attribute is ever an address. A call
// holds a reference to its layer while it runs, so OverlapLayerRelease
// never frees a step under a running call: the last reference destroys it.
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
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace ffi = xla::ffi;

namespace {

/// overlapStepCallInRun: the run is XLA's RunId, the same on every device
/// of one execution, so each execution's calls are counted apart.
/// The buffers' sizes go with them: a call naming a live layer with buffers
/// of other sizes is refused before anything is read or written.
using StepCall = int (*)(void *step, int rank, int64_t run,
                         const void *const *inputs, const size_t *inputBytes,
                         size_t numInputs, void *const *outputs,
                         const size_t *outputBytes, size_t numOutputs,
                         char **messages);
using DeviceCall = int (*)(void *layer, void *stream, const void *const *inputs,
                           const size_t *inputBytes, size_t numInputs,
                           void *const *outputs, const size_t *outputBytes,
                           size_t numOutputs, char **messages);
using FreeFn = void (*)(void *);

/// What a layer is: a host step (overlapStepCreate) or a device layer
/// (overlapDeviceLayerCreate). The CPU handler runs only the first, the
/// CUDA handler only the second: they take different calls.
enum Kind : int { kHostStep = 0, kDeviceLayer = 1 };

/// A registered layer. Destroyed (its object with `destroy`) when the last
/// reference goes: the registry's (until OverlapLayerRelease) or a running
/// call's. `inputs` and `outputs` are the element types (XLA_FFI_DataType
/// codes) its buffers must have, when given: the step checks sizes only,
/// and an int32 buffer where the program takes float32 has the same size.
struct Layer {
  Layer(Kind kind, void *object, void *call, FreeFn free, FreeFn destroy,
        std::vector<int32_t> inputs, std::vector<int32_t> outputs)
      : kind(kind), object(object), call(call), free(free), destroy(destroy),
        inputs(std::move(inputs)), outputs(std::move(outputs)) {}
  Layer(const Layer &) = delete;
  Layer &operator=(const Layer &) = delete;
  ~Layer() { destroy(object); }

  const Kind kind;
  void *const object;
  void *const call;
  const FreeFn free;
  const FreeFn destroy;
  const std::vector<int32_t> inputs, outputs;
};

/// The layers by id. Never destroyed: a layer still registered at exit
/// stays (its library may be unloaded before this one).
struct Registry {
  std::mutex mutex;
  std::unordered_map<int64_t, std::shared_ptr<Layer>> layers;
  /// A non-deterministic source (libstdc++: the CPU's or the OS's), drawn
  /// for each id: an id seen in one program tells nothing of another.
  std::random_device device;
};

Registry &registry() {
  static Registry *r = new Registry;
  return *r;
}

std::shared_ptr<Layer> lookup(int64_t id) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.layers.find(id);
  return it == r.layers.end() ? nullptr : it->second;
}

/// The call's operands (after the rank) and results: data and sizes.
struct Buffers {
  std::vector<const void *> inputs;
  std::vector<size_t> inputBytes;
  std::vector<void *> outputs;
  std::vector<size_t> outputBytes;
};

/// An error when buffer `i` of `what` ("input", "output") has element type
/// `got` where the layer's types (when it has them) say otherwise.
ffi::Error checkType(const std::vector<int32_t> &types, size_t count,
                     const char *what, size_t i, ffi::DataType got) {
  if (types.empty())
    return ffi::Error::Success();
  if (types.size() != count)
    return ffi::Error::InvalidArgument(
        std::string("overlap_layer: the layer takes ") +
        std::to_string(types.size()) + " " + what + "s, the call gives " +
        std::to_string(count));
  if (static_cast<int32_t>(got) != types[i])
    return ffi::Error::InvalidArgument(
        std::string("overlap_layer: ") + what + " " + std::to_string(i) +
        " has element type " + std::to_string(static_cast<int32_t>(got)) +
        " (an XLA_FFI_DataType), the layer takes " +
        std::to_string(types[i]));
  return ffi::Error::Success();
}

ffi::Error buffers(const Layer &layer, const ffi::RemainingArgs &args,
                   const ffi::RemainingRets &rets, Buffers &out) {
  for (size_t i = 0; i < args.size(); ++i) {
    auto arg = args.get<ffi::AnyBuffer>(i);
    if (!arg.has_value())
      return arg.error();
    if (ffi::Error error = checkType(layer.inputs, args.size(), "input", i,
                                     arg->element_type());
        error.failure())
      return error;
    out.inputs.push_back(arg->untyped_data());
    out.inputBytes.push_back(arg->size_bytes());
  }
  for (size_t i = 0; i < rets.size(); ++i) {
    auto ret = rets.get<ffi::AnyBuffer>(i);
    if (!ret.has_value())
      return ret.error();
    if (ffi::Error error = checkType(layer.outputs, rets.size(), "output", i,
                                     (*ret)->element_type());
        error.failure())
      return error;
    out.outputs.push_back((*ret)->untyped_data());
    out.outputBytes.push_back((*ret)->size_bytes());
  }
  return ffi::Error::Success();
}

/// The common part of both handlers: finds layer `id` of kind `kind`
/// (an error naming the id when there is none), gathers the buffers, runs
/// `invoke(layer, buffers, &messages)` holding a reference to the
/// layer, and turns a non-zero status into an error that carries the
/// messages (freed with the layer's `free`).
template <typename Invoke>
ffi::Error callLayer(int64_t id, Kind kind, const ffi::RemainingArgs &args,
                     const ffi::RemainingRets &rets, Invoke invoke) {
  std::shared_ptr<Layer> layer = lookup(id);
  if (!layer || layer->kind != kind)
    return ffi::Error::InvalidArgument(
        "overlap_layer: attribute layer=" + std::to_string(id) + " names no " +
        (kind == kHostStep ? "host layer" : "device layer") +
        " of this process: the layer was released (its overlap.jax.jit "
        "Layer was deleted while a compiled program still calls it; keep "
        "the Layer as long as the program), or the call was not made by "
        "overlap.jax.jit");
  Buffers all;
  if (ffi::Error error = buffers(*layer, args, rets, all); error.failure())
    return error;
  char *messages = nullptr;
  int status = invoke(*layer, all, &messages);
  std::string text = messages ? messages : "";
  layer->free(messages);
  if (status != 0)
    return ffi::Error::Internal("overlap_layer: " + text);
  return ffi::Error::Success();
}

ffi::Error OverlapLayerImpl(ffi::RunId run, int64_t id,
                            ffi::Buffer<ffi::S32> rank, ffi::RemainingArgs args,
                            ffi::RemainingRets rets) {
  if (rank.element_count() != 1)
    return ffi::Error::InvalidArgument(
        "overlap_layer: operand 0 (the device's rank) has " +
        std::to_string(rank.element_count()) + " elements, not 1");
  return callLayer(id, kHostStep, args, rets,
                   [&](const Layer &layer, Buffers &all, char **messages) {
                     return reinterpret_cast<StepCall>(layer.call)(
                         layer.object, rank.typed_data()[0], run.run_id,
                         all.inputs.data(), all.inputBytes.data(),
                         all.inputs.size(), all.outputs.data(),
                         all.outputBytes.data(), all.outputs.size(), messages);
                   });
}

ffi::Error OverlapLayerCudaImpl(void *stream, int64_t id,
                                ffi::AnyBuffer /*rank*/,
                                ffi::RemainingArgs args,
                                ffi::RemainingRets rets) {
  return callLayer(id, kDeviceLayer, args, rets,
                   [&](const Layer &layer, Buffers &all, char **messages) {
                     return reinterpret_cast<DeviceCall>(layer.call)(
                         layer.object, stream, all.inputs.data(),
                         all.inputBytes.data(), all.inputs.size(),
                         all.outputs.data(), all.outputBytes.data(),
                         all.outputs.size(), messages);
                   });
}

} // namespace

extern "C" {

/// Registers a layer that overlap.jax.jit made: `object` of `kind` (0 an
/// OverlapStep*, 1 an OverlapDeviceLayer*), run by `call`
/// (overlapStepCallInRun or overlapDeviceLayerCall), whose messages `free`
/// frees, destroyed by `destroy` when the last reference goes. Returns its
/// id (> 0, unpredictable), 0 when an argument is missing; the registry
/// owns `object` from then on (also on 0: it is destroyed). `types` (may be
/// null) holds `numInputs` then `numOutputs` XLA_FFI_DataType codes: a call
/// whose buffers have other element types is refused before anything is
/// read or written.
__attribute__((visibility("default"))) int64_t
OverlapLayerRegister(int kind, void *object, void *call, void *free,
                     void *destroy, const int32_t *types, size_t numInputs,
                     size_t numOutputs) {
  if (!destroy)
    return 0;
  if (!object || !call || !free ||
      (kind != kHostStep && kind != kDeviceLayer) ||
      (!types && numInputs + numOutputs)) {
    reinterpret_cast<FreeFn>(destroy)(object);
    return 0;
  }
  std::vector<int32_t> inputs, outputs;
  if (types) {
    inputs.assign(types, types + numInputs);
    outputs.assign(types + numInputs, types + numInputs + numOutputs);
  }
  auto layer = std::make_shared<Layer>(
      static_cast<Kind>(kind), object, call, reinterpret_cast<FreeFn>(free),
      reinterpret_cast<FreeFn>(destroy), std::move(inputs), std::move(outputs));
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  int64_t id;
  do // 63 random bits: positive, so it fits the int64 attribute
    id = static_cast<int64_t>(
        ((static_cast<uint64_t>(r.device()) << 32) | r.device()) >> 1);
  while (id == 0 || r.layers.count(id));
  r.layers.emplace(id, std::move(layer));
  return id;
}

/// Forgets layer `id`: later calls naming it fail; a running call keeps it
/// until it returns, and the last reference destroys it. Returns 0, or 1
/// when `id` is not registered.
__attribute__((visibility("default"))) int OverlapLayerRelease(int64_t id) {
  std::shared_ptr<Layer> layer;
  {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.layers.find(id);
    if (it == r.layers.end())
      return 1;
    layer = std::move(it->second);
    r.layers.erase(it);
  }
  return 0; // `layer` goes here, outside the lock, or with the last call
}

/// Layers registered now (for tests).
__attribute__((visibility("default"))) int64_t OverlapLayerCount() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return static_cast<int64_t>(r.layers.size());
}

} // extern "C"

XLA_FFI_DEFINE_HANDLER_SYMBOL(OverlapLayerCuda, OverlapLayerCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<void *>>()
                                  .Attr<int64_t>("layer")
                                  .Arg<ffi::AnyBuffer>()
                                  .RemainingArgs()
                                  .RemainingRets());

XLA_FFI_DEFINE_HANDLER_SYMBOL(OverlapLayer, OverlapLayerImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::RunId>()
                                  .Attr<int64_t>("layer")
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .RemainingArgs()
                                  .RemainingRets());

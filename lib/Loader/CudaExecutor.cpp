//===- CudaExecutor.cpp - Ranks on CUDA devices -----------------*- C++ -*-===//
//
// Runs a program compiled with --target=cuda as one rank alone on a device
// (overlap_cuda_context_create_single), or as this process's rank of a job
// a launcher started, one process per GPU (mpirun, srun, torchrun:
// overlap_cuda_context_create_launched, the device by local rank, NCCL
// bootstrapped from the launcher). The inputs are made on the host as for
// the host backend and copied to device memory, the entry is called on the
// main thread, the context is synchronized, and the outputs (results and
// arguments) are copied back to the host for the comparison; in a job,
// every process agrees before each entry call that none has failed, and
// rank 0 gathers every rank's outputs (gatherProcessOutputs, as host
// ranks as processes). Built only with the CUDA backend
// (OVERLAP_HAVE_CUDA); otherwise every creation fails as "no device".
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/Executor.h"
#include "overlap/Loader/ProcessRun.h"
#include "overlap/Loader/RuntimeApi.h"

#ifdef OVERLAP_HAVE_CUDA

#include "CudaLayerOrder.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <optional>

namespace overlap {
namespace exec {

namespace {
// The CUDA runtime's functions this executor calls (CudaRt,
// CudaLayerOrder.h) are found through the handle of
// liboverlap_runtime_cuda.so (which links libcudart): the loader links no
// CUDA library (only its headers are used here).
#define OVERLAP_STRINGIFY(x) #x
/// Binds `table` from the runtime's handle; on failure names the missing
/// function in `error`.
bool bindCudaRt(CudaRt &table, std::string &error) {
  void *handle = rt().handle;
  // A macro name (cudaGetDeviceProperties is cudaGetDeviceProperties_v2)
  // is expanded before it is turned into the symbol's name.
#define OVERLAP_CUDART_BIND(NAME)                                              \
  table.NAME = reinterpret_cast<decltype(table.NAME)>(                         \
      dlsym(handle, OVERLAP_STRINGIFY(NAME)));                                 \
  if (!table.NAME) {                                                           \
    error = std::string("the runtime ") + rt().path + " has no " +             \
            OVERLAP_STRINGIFY(NAME) + " (libcudart)";                          \
    return false;                                                              \
  }
  OVERLAP_CUDART_FUNCTIONS(OVERLAP_CUDART_BIND)
  OVERLAP_CUDART_BIND(mgpuMemAlloc)
#undef OVERLAP_CUDART_BIND
  return true;
}

CudaRt cudaRt;
/// The bound table (createCudaExecutor binds it before any use).
const CudaRt &cu() { return cudaRt; }

/// A non-blocking stream of our own for the poison: it neither waits for
/// nor delays the program's streams, so filling a new buffer cannot
/// deadlock with a stream that waits for work the program has yet to
/// enqueue.
cudaStream_t poisonStream = nullptr;

/// Fills new device memory with all-ones bytes (NaN) before the program
/// gets it.
void poisonDevice(void *ptr, size_t bytes) {
  if (!ptr || !bytes || !run::poisoning())
    return;
  if (cu().cudaMemsetAsync(ptr, 0xff, bytes, poisonStream) != cudaSuccess ||
      cu().cudaStreamSynchronize(poisonStream) != cudaSuccess)
    (void)cu().cudaGetLastError();
}

overlap_status cudaPoisonedOverlapAlloc(overlap_context *ctx, size_t bytes,
                                        void **ptr) {
  overlap_status status = rt().overlap_alloc(ctx, bytes, ptr);
  if (status == OVERLAP_SUCCESS)
    poisonDevice(*ptr, bytes);
  return status;
}

/// Compiled programs allocate stream-ordered: the memory is theirs once
/// the streams have reached the allocation, so wait for them first.
overlap_status cudaPoisonedOverlapAllocAsync(overlap_context *ctx,
                                             int32_t stream, size_t bytes,
                                             void **ptr) {
  overlap_status status = rt().overlap_alloc_async(ctx, stream, bytes, ptr);
  if (status == OVERLAP_SUCCESS && *ptr && run::poisoning()) {
    status = rt().overlap_context_synchronize(ctx);
    poisonDevice(*ptr, bytes);
  }
  return status;
}

void *poisonedMgpuMemAlloc(uint64_t bytes, void *stream, bool isHostShared) {
  void *ptr = cu().mgpuMemAlloc(bytes, stream, isHostShared);
  poisonDevice(ptr, bytes);
  return ptr;
}

/// Frees a result buffer of the program by the kind of its memory.
void releaseResult(void *ptr) {
  cudaPointerAttributes attributes;
  if (cu().cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    (void)cu().cudaGetLastError();
    std::free(ptr);
    return;
  }
  switch (attributes.type) {
  case cudaMemoryTypeDevice:
  case cudaMemoryTypeManaged:
    (void)cu().cudaFree(ptr);
    break;
  case cudaMemoryTypeHost:
    (void)cu().cudaFreeHost(ptr);
    break;
  default:
    std::free(ptr);
    break;
  }
}

/// The CUDA backend's defaults with the session's wait timeout.
overlap_cuda_options cudaOptions(int64_t waitTimeoutMs) {
  overlap_cuda_options options;
  rt().overlap_cuda_options_init(&options);
  options.wait_timeout_ms = waitTimeoutMs;
  return options;
}

std::string cudaText(cudaError_t e) {
  return std::string(cu().cudaGetErrorName(e)) + " (" +
         cu().cudaGetErrorString(e) + ")";
}

class CudaExecutor : public Executor {
public:
  /// One rank alone (`size` 1), or rank `rank` of a job of `size`
  /// processes (`processes`).
  CudaExecutor(overlap_context *ctx, int device, int rank = 0, int size = 1,
               bool processes = false)
      : ctx(ctx), device(device), rank(rank), size(size), processes(processes) {
  }
  ~CudaExecutor() override {
    rt().overlap_cuda_context_destroy(ctx);
    if (poisonStream)
      (void)cu().cudaStreamDestroy(poisonStream);
    poisonStream = nullptr;
  }

  std::string where() const override {
    cudaDeviceProp props;
    std::string name =
        cu().cudaGetDeviceProperties(&props, device) == cudaSuccess
            ? std::string(" (") + props.name + ")"
            : "";
    if (processes)
      return std::to_string(size) + " rank" + (size == 1 ? "" : "s") +
             ", one process and one CUDA device each (rank 0 on device " +
             std::to_string(device) + name + ")";
    return "1 rank on CUDA device " + std::to_string(device) + name;
  }
  const char *backend() const override { return "cuda"; }

  /// The host allocators as on the host; device memory poisoned on the
  /// device.
  std::vector<ImportRedirect> poisonedImports() const override {
    std::vector<ImportRedirect> redirects = hostPoisonedImports();
    for (ImportRedirect &redirect : redirects)
      if (std::string(redirect.name) == "overlap_alloc")
        redirect.replacement =
            reinterpret_cast<void *>(&cudaPoisonedOverlapAlloc);
    redirects.push_back(
        {"overlap_alloc_async",
         reinterpret_cast<void *>(&cudaPoisonedOverlapAllocAsync)});
    redirects.push_back(
        {"mgpuMemAlloc", reinterpret_cast<void *>(&poisonedMgpuMemAlloc)});
    return redirects;
  }

  bool execute(const Library &lib, uint64_t seed, int iterations,
               Outcome &outcome, std::string &error) override {
    const run::Signature &sig = lib.sig;
    const run::EntryCall entryCall = [&lib](std::vector<void *> &values) {
      callCInterface(lib.entry, values);
    };
    outcome.run.sig = &sig;
    outcome.run.seed = seed;
    outcome.run.ranks.clear();
    outcome.run.ranks.resize(size);
    run::RankData &data = outcome.run.ranks[rank];
    std::vector<void *> deviceArgs(sig.args.size(), nullptr);
    auto freeDeviceArgs = [&] {
      for (void *&ptr : deviceArgs) {
        rt().overlap_free(ctx, ptr);
        ptr = nullptr;
      }
    };
    auto fail = [&](const std::string &why) {
      freeDeviceArgs();
      error = why;
      return false;
    };
    // In a job, every process reaches this before each collective step:
    // one that failed says why (rank 0 prints every rank's), the others
    // stop with it instead of waiting in NCCL for a rank that never comes.
    std::string failure;
    auto agreed = [&]() {
      if (!processes)
        return failure.empty() || fail(failure);
      bool any = false;
      std::string why;
      if (!anyProcessFailed(!failure.empty(), any, why))
        return fail(why);
      return !any || fail(failure);
    };
    if (!run::prepareRank(sig, seed, rank, data,
                          outcome.run.given ? &(*outcome.run.given)[rank]
                                            : nullptr))
      failure = data.error;
    for (size_t i = 0; i < sig.args.size() && failure.empty(); ++i) {
      size_t bytes = sig.args[i].numElements() * sig.args[i].elemBytes();
      if (rt().overlap_alloc(ctx, bytes, &deviceArgs[i]) != OVERLAP_SUCCESS)
        failure = std::string("allocating ") + sig.args[i].name + ": " +
                  rt().overlap_last_error(ctx);
    }
    const int runs = checkedRuns(iterations);
    for (int it = 0; it < runs; ++it) {
      if (it > 0)
        run::freeResults(sig, data, releaseResult);
      // Fresh inputs each time: arguments may be updated in place.
      for (size_t i = 0; i < sig.args.size() && failure.empty(); ++i) {
        const run::BufferSpec &spec = sig.args[i];
        cudaError_t e = cu().cudaMemcpy(deviceArgs[i], data.args[i].data,
                                        spec.numElements() * spec.elemBytes(),
                                        cudaMemcpyHostToDevice);
        if (e != cudaSuccess)
          failure = "copying " + spec.name + " to the device: " + cudaText(e);
        else
          data.argDescriptors[i] =
              run::contiguousDescriptor(spec, deviceArgs[i]);
      }
      // Nothing of the inputs' copies or the last run's frees is left for
      // the clock.
      if (failure.empty())
        if (cudaError_t ready = cu().cudaDeviceSynchronize();
            ready != cudaSuccess)
          failure =
              "cudaDeviceSynchronize before the entry: " + cudaText(ready);
      if (!agreed())
        return false;
      run::resetResultStorage(sig, data);
      std::vector<void *> values = run::entryValues(sig, data, ctx);
      // Only the last run, whose outputs are compared, is poisoned: the
      // others time the entry call and the synchronize alone.
      run::setPoisoning(it + 1 == runs);
      auto start = std::chrono::steady_clock::now();
      run::callGuarded(ctx, entryCall, values);
      overlap_status status = rt().overlap_context_synchronize(ctx);
      // Kernels on streams the program made itself (mgpuStreamCreate) are
      // not the context's; a failed context may have streams still stuck.
      cudaError_t e = status == OVERLAP_SUCCESS ? cu().cudaDeviceSynchronize()
                                                : cudaSuccess;
      double ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
      run::setPoisoning(true);
      if (status != OVERLAP_SUCCESS)
        failure = std::string(rt().overlap_status_name(status)) + ": " +
                  rt().overlap_last_error(ctx);
      else if (e != cudaSuccess)
        failure = "cudaDeviceSynchronize after the entry: " + cudaText(e);
      if (!agreed())
        return false;
      // The slowest rank's time, as host ranks as processes report it.
      if (processes) {
        int64_t nanos = std::llround(ms * 1e6);
        if (rt().overlap_process_max(&nanos) != OVERLAP_SUCCESS)
          return fail(rt().overlap_host_launch_error());
        ms = static_cast<double>(nanos) / 1e6;
      }
      if (isTimedRun(it, iterations))
        outcome.iterationMs.push_back(ms);
    }
    // This rank's outputs, copied to the host.
    std::vector<run::OutputView> views;
    cudaError_t copyError = cudaSuccess;
    if (!run::outputViews(sig, data, views, failure))
      failure = "rank " + std::to_string(rank) + ": " + failure;
    else if (!run::copyViewsToHost(
                 sig, views, data,
                 [&](void *dst, const void *src, size_t bytes) {
                   copyError =
                       cu().cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
                   return copyError == cudaSuccess;
                 }))
      failure = "copying the outputs to the host: " + cudaText(copyError);
    freeDeviceArgs();
    if (!processes) {
      if (!failure.empty())
        return fail(failure);
      outcome.outputs.assign(1, std::move(views));
      return true;
    }
    // Every rank's outputs to rank 0 (a rank without them sends why).
    return gatherProcessOutputs(sig, outcome, rank, size,
                                failure.empty() ? &views : nullptr, error);
  }

  void release(const Library &lib, Outcome &outcome) override {
    for (run::RankData &data : outcome.run.ranks)
      run::freeResults(lib.sig, data, releaseResult);
  }

private:
  overlap_context *ctx;
  int device;
  int rank, size;
  bool processes;
};

/// The CUDA runtime's functions bound and this process's devices counted:
/// nullopt and `noDevice` when there is no runtime with CUDA or no device.
std::optional<int> visibleDevices(bool &noDevice, std::string &error) {
  noDevice = false;
  if (!rt().hasCuda()) {
    noDevice = true;
    error = "the runtime " + rt().path +
            " has no CUDA backend (liboverlap_runtime_cuda.so is built only "
            "where CMake finds CUDA, NCCL and cuBLASLt)";
    return std::nullopt;
  }
  if (!bindCudaRt(cudaRt, error))
    return std::nullopt;
  const char *why = nullptr;
  int count = rt().overlap_cuda_device_count(&why);
  if (count == 0) {
    noDevice = true;
    error = std::string("no CUDA device (") +
            (why && *why ? why : "cudaGetDeviceCount found none") + ")";
    return std::nullopt;
  }
  return count;
}

/// The executor of `ctx`, with the stream its poisoning fills run on.
std::unique_ptr<Executor> makeExecutor(overlap_context *ctx, int device,
                                       int rank, int size, bool processes,
                                       std::string &error) {
  cudaError_t e =
      cu().cudaStreamCreateWithFlags(&poisonStream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    rt().overlap_cuda_context_destroy(ctx);
    error = "cudaStreamCreateWithFlags: " + cudaText(e);
    return nullptr;
  }
  return std::make_unique<CudaExecutor>(ctx, device, rank, size, processes);
}
} // namespace

bool haveCudaBackend() { return true; }

std::unique_ptr<Executor> createCudaExecutor(int device, int64_t waitTimeoutMs,
                                             bool &noDevice,
                                             std::string &error) {
  std::optional<int> count = visibleDevices(noDevice, error);
  if (!count)
    return nullptr;
  if (device < 0 || device >= *count) {
    error = "--device " + std::to_string(device) + ": this machine has " +
            std::to_string(*count) + " CUDA device" + (*count == 1 ? "" : "s");
    return nullptr;
  }
  overlap_cuda_options options = cudaOptions(waitTimeoutMs);
  overlap_context *ctx = nullptr;
  if (rt().overlap_cuda_context_create_single(device, &options, &ctx) !=
      OVERLAP_SUCCESS) {
    error = std::string("cannot create a CUDA context: ") +
            rt().overlap_cuda_create_error();
    return nullptr;
  }
  return makeExecutor(ctx, device, 0, 1, /*processes=*/false, error);
}

std::unique_ptr<Executor> createCudaProcessExecutor(int rank, int size,
                                                    int64_t waitTimeoutMs,
                                                    bool &noDevice,
                                                    std::string &error) {
  // Every process counts its devices and the job agrees before any
  // bootstrap: a process without one would leave the others waiting in
  // NCCL's.
  std::string mine;
  std::optional<int> count = visibleDevices(noDevice, mine);
  bool any = false;
  std::string why;
  if (!anyProcessFailed(!count, any, why)) {
    error = why;
    return nullptr;
  }
  if (any) {
    // A process with a device says nothing; one without says why.
    noDevice = true;
    error = mine;
    return nullptr;
  }
  overlap_cuda_options options = cudaOptions(waitTimeoutMs);
  overlap_context *ctx = nullptr;
  // Rank, world size and local rank from the launcher's environment, the
  // device by local rank, NCCL's unique id through the rendezvous
  // (overlap_runtime_cuda.h).
  overlap_status status =
      rt().overlap_cuda_context_create_launched(&options, &ctx);
  std::string failure;
  if (status != OVERLAP_SUCCESS) {
    failure = std::string("cannot create a CUDA context for rank ") +
              std::to_string(rank) + ": " + rt().overlap_cuda_create_error();
  } else if (rt().overlap_context_rank(ctx) != rank ||
             rt().overlap_context_size(ctx) != size) {
    failure = "the launcher's environment makes this process rank " +
              std::to_string(rt().overlap_context_rank(ctx)) + " of " +
              std::to_string(rt().overlap_context_size(ctx)) + ", MPI rank " +
              std::to_string(rank) + " of " + std::to_string(size) +
              " (OVERLAP_RANK / OVERLAP_WORLD_SIZE must match the job)";
  }
  if (!anyProcessFailed(!failure.empty(), any, why) || any) {
    if (ctx)
      rt().overlap_cuda_context_destroy(ctx);
    error = !why.empty() ? why : failure;
    return nullptr;
  }
  return makeExecutor(ctx, rt().overlap_cuda_device(ctx), rank, size,
                      /*processes=*/true, error);
}

namespace {

class CudaDeviceContext : public DeviceContext {
public:
  CudaDeviceContext(overlap_context *ctx, int ranks, int rank, int device)
      : ctx(ctx), ranks_(ranks), rank_(rank), device_(device) {
    for (int i = 0, n = rt().overlap_context_num_streams(ctx); i < n; ++i)
      streams.push_back(
          static_cast<cudaStream_t>(rt().overlap_cuda_stream(ctx, i)));
  }
  ~CudaDeviceContext() override { rt().overlap_cuda_context_destroy(ctx); }

  std::string failure() override {
    overlap_status status = rt().overlap_context_status(ctx);
    if (status == OVERLAP_SUCCESS)
      return "";
    return std::string(rt().overlap_status_name(status)) + ": " +
           rt().overlap_last_error(ctx);
  }
  int ranks() const override { return ranks_; }
  int rank() const override { return rank_; }
  int device() const override { return device_; }

  overlap_context *const ctx;
  std::vector<cudaStream_t> streams;
  /// One layer's call, creation or destruction at a time: the context's
  /// streams are enqueued from one thread, and a call drains them before
  /// the next begins (XLA may call from several threads).
  std::mutex mutex;

private:
  const int ranks_, rank_, device_;
};

class CudaDeviceLayer : public DeviceLayer {
public:
  explicit CudaDeviceLayer(std::shared_ptr<CudaDeviceContext> context)
      : context(std::move(context)), ctx(this->context->ctx) {}
  ~CudaDeviceLayer() override {
    std::lock_guard<std::mutex> lock(context->mutex);
    std::string ignored;
    (void)layer_order::waitCopiesOut(cu(), events, ignored);
    run::freeResults(lib.sig, data, releaseResult);
    for (void *ptr : deviceArgs)
      rt().overlap_free(ctx, ptr);
    layer_order::destroyEvents(cu(), events);
    // The context goes with its last layer (after this body: the lock is
    // released first).
  }

  /// One call, stream-ordered on the caller's stream (CudaLayerOrder.h):
  /// the inputs are copied on it and the context's streams wait for them;
  /// the entry enqueues the program and the host waits for the context
  /// (the runtime's bounded waits and errors are reported there, and the
  /// results' descriptors are final only then); the caller's stream waits
  /// for the context's streams and copies the outputs, so the caller's next
  /// work reads them after they landed. The results are freed at the next
  /// call, once the host has seen those copies end. Calls of every layer
  /// on the context are serialized.
  bool call(void *stream, const void *const *inputs, const size_t *inputBytes,
            size_t numInputs, void *const *outputs, const size_t *outputBytes,
            size_t numOutputs, std::string &error) override {
    const run::Signature &sig = lib.sig;
    const run::EntryCall entryCall = [this](std::vector<void *> &values) {
      callCInterface(lib.entry, values);
    };
    if (numInputs != sig.args.size() || numOutputs != sig.results.size()) {
      error = "@" + sig.name + " takes " + std::to_string(sig.args.size()) +
              " inputs and " + std::to_string(sig.results.size()) +
              " outputs, but the call gave " + std::to_string(numInputs) +
              " and " + std::to_string(numOutputs);
      return false;
    }
    if (std::string why = run::bufferSizeMisfit(sig, inputBytes, outputBytes);
        !why.empty()) {
      error = why;
      return false;
    }
    std::lock_guard<std::mutex> lock(context->mutex);
    const std::vector<cudaStream_t> &streams = context->streams;
    cudaStream_t caller = static_cast<cudaStream_t>(stream);
    // The last call's results were copied out: free them (once) after the
    // copies, which read them on that call's stream.
    if (!layer_order::waitCopiesOut(cu(), events, error))
      return false;
    run::freeResults(sig, data, releaseResult);
    run::resetResultStorage(sig, data);
    std::vector<layer_order::Copy> in;
    for (size_t i = 0; i < sig.args.size(); ++i) {
      const run::BufferSpec &spec = sig.args[i];
      in.push_back({deviceArgs[i], inputs[i],
                    spec.numElements() * spec.elemBytes(),
                    "input " + spec.name});
      data.argDescriptors[i] = run::contiguousDescriptor(spec, deviceArgs[i]);
    }
    if (!layer_order::copyIn(cu(), caller, streams, events, in, error))
      return false;
    std::vector<void *> values = run::entryValues(sig, data, ctx);
    run::callGuarded(ctx, entryCall, values);
    if (overlap_status status = rt().overlap_context_synchronize(ctx)) {
      error = std::string(rt().overlap_status_name(status)) + ": " +
              rt().overlap_last_error(ctx);
      return false;
    }
    std::vector<run::OutputView> views;
    if (!run::outputViews(sig, data, views, error))
      return false;
    std::vector<layer_order::Copy> out;
    for (size_t i = 0; i < sig.results.size(); ++i) {
      const run::BufferSpec &spec = sig.results[i];
      const run::OutputView &view = views[i];
      int64_t stride = 1;
      for (size_t d = spec.shape.size(); d-- > 0;) {
        if (spec.shape[d] != 1 && view.strides[d] != stride) {
          error = spec.name + " of @" + sig.name +
                  " is strided in device memory; the device layer copies "
                  "contiguous results only";
          return false;
        }
        stride *= spec.shape[d];
      }
      out.push_back({outputs[i], view.base,
                     spec.numElements() * spec.elemBytes(),
                     "output " + spec.name});
    }
    if (!layer_order::copyOut(cu(), caller, streams, events, out, error)) {
      // Some copies may be enqueued without the event: the results stay
      // until they are done.
      (void)cu().cudaStreamSynchronize(caller);
      return false;
    }
    return true;
  }

  /// First, so that it is destroyed last.
  std::shared_ptr<CudaDeviceContext> context;
  overlap_context *const ctx;
  Library lib;
  run::RankData data;
  std::vector<void *> deviceArgs;
  layer_order::Events events;
};

} // namespace

bool cudaUniqueId(uint8_t *id, bool &noDevice, std::string &error) {
  if (!visibleDevices(noDevice, error))
    return false;
  if (rt().overlap_cuda_unique_id(id) != OVERLAP_SUCCESS) {
    error = std::string("overlap_cuda_unique_id: ") +
            rt().overlap_cuda_create_error();
    return false;
  }
  return true;
}

std::shared_ptr<DeviceContext>
createDeviceContext(const uint8_t *uniqueId, int ranks, int rank, int device,
                    int64_t waitTimeoutMs, int64_t initTimeoutMs,
                    bool &noDevice, std::string &error) {
  std::optional<int> count = visibleDevices(noDevice, error);
  if (!count)
    return nullptr;
  if (device < 0 || device >= *count || ranks < 1 || rank < 0 ||
      rank >= ranks || (ranks > 1 && !uniqueId)) {
    error = "rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
            " on device " + std::to_string(device) + " of " +
            std::to_string(*count) +
            (ranks > 1 && !uniqueId ? ", without an NCCL unique id" : "");
    return nullptr;
  }
  if (initTimeoutMs < 0) {
    error = "the NCCL init bound is negative (" +
            std::to_string(initTimeoutMs) + " ms)";
    return nullptr;
  }
  overlap_cuda_options options = cudaOptions(waitTimeoutMs);
  options.init_timeout_ms = initTimeoutMs;
  overlap_context *ctx = nullptr;
  overlap_status status =
      ranks == 1
          ? rt().overlap_cuda_context_create_single(device, &options, &ctx)
          : rt().overlap_cuda_context_create_rank(uniqueId, ranks, rank, device,
                                                  &options, &ctx);
  if (status != OVERLAP_SUCCESS) {
    error = std::string("cannot create a CUDA context: ") +
            rt().overlap_cuda_create_error();
    return nullptr;
  }
  return std::make_shared<CudaDeviceContext>(ctx, ranks, rank, device);
}

std::unique_ptr<DeviceLayer>
createDeviceLayerOn(const std::shared_ptr<DeviceContext> &shared,
                    const std::string &program, std::string &error) {
  auto context = std::dynamic_pointer_cast<CudaDeviceContext>(shared);
  if (!context) {
    error = "no CUDA device context";
    return nullptr;
  }
  if (std::string why = context->failure(); !why.empty()) {
    error = "the device context (rank " + std::to_string(context->rank()) +
            " of " + std::to_string(context->ranks()) + " on device " +
            std::to_string(context->device()) +
            ") failed earlier and takes no new layer: " + why;
    return nullptr;
  }
  auto layer = std::make_unique<CudaDeviceLayer>(context);
  overlap_context *ctx = context->ctx;
  // The layer's destructor takes the lock too: it is released before a
  // failed layer is dropped.
  {
    std::lock_guard<std::mutex> lock(context->mutex);
    if (!layer_order::createEvents(cu(), context->streams.size(), layer->events,
                                   error))
      return nullptr;
    if (!loadLibrary(program, layer->lib, error))
      return nullptr;
    const run::Signature &sig = layer->lib.sig;
    if (sig.target != "cuda") {
      error = program + " was compiled for --target=" + sig.target +
              "; a device layer runs --target=cuda programs";
      return nullptr;
    }
    run::RankData &data = layer->data;
    data.argDescriptors.resize(sig.args.size());
    layer->deviceArgs.assign(sig.args.size(), nullptr);
    for (size_t i = 0; i < sig.args.size(); ++i) {
      const run::BufferSpec &spec = sig.args[i];
      if (spec.isDynamic()) {
        error = spec.name + " of @" + sig.name + " has a dynamic shape";
        return nullptr;
      }
      if (rt().overlap_alloc(ctx, spec.numElements() * spec.elemBytes(),
                             &layer->deviceArgs[i]) != OVERLAP_SUCCESS) {
        error = "allocating " + spec.name + ": " + rt().overlap_last_error(ctx);
        return nullptr;
      }
    }
    run::resetResultStorage(sig, data);
  }
  return layer;
}

std::unique_ptr<DeviceLayer>
createDeviceLayer(const std::string &program, const uint8_t *uniqueId,
                  int ranks, int rank, int device, int64_t waitTimeoutMs,
                  int64_t initTimeoutMs, bool &noDevice, std::string &error) {
  std::shared_ptr<DeviceContext> context =
      createDeviceContext(uniqueId, ranks, rank, device, waitTimeoutMs,
                          initTimeoutMs, noDevice, error);
  if (!context)
    return nullptr;
  return createDeviceLayerOn(context, program, error);
}

} // namespace exec
} // namespace overlap

#else // !OVERLAP_HAVE_CUDA

namespace overlap {
namespace exec {

bool haveCudaBackend() { return false; }

std::unique_ptr<Executor> createCudaExecutor(int, int64_t, bool &noDevice,
                                             std::string &error) {
  noDevice = true;
  error = "this overlap-exec was built without the CUDA backend (CMake found "
          "no CUDA, NCCL or cuBLASLt: OVERLAP_HAVE_CUDA is off)";
  return nullptr;
}

std::unique_ptr<Executor> createCudaProcessExecutor(int, int, int64_t,
                                                    bool &noDevice,
                                                    std::string &error) {
  return createCudaExecutor(0, 0, noDevice, error);
}

bool cudaUniqueId(uint8_t *, bool &noDevice, std::string &error) {
  return static_cast<bool>(createCudaExecutor(0, 0, noDevice, error));
}

std::shared_ptr<DeviceContext> createDeviceContext(const uint8_t *, int, int,
                                                   int, int64_t, int64_t,
                                                   bool &noDevice,
                                                   std::string &error) {
  createCudaExecutor(0, 0, noDevice, error);
  return nullptr;
}

std::unique_ptr<DeviceLayer>
createDeviceLayerOn(const std::shared_ptr<DeviceContext> &context,
                    const std::string &, std::string &error) {
  bool noDevice = false;
  if (context)
    error = "no CUDA device context";
  else
    createCudaExecutor(0, 0, noDevice, error);
  return nullptr;
}

std::unique_ptr<DeviceLayer> createDeviceLayer(const std::string &,
                                               const uint8_t *, int, int, int,
                                               int64_t, int64_t, bool &noDevice,
                                               std::string &error) {
  createCudaExecutor(0, 0, noDevice, error);
  return nullptr;
}

} // namespace exec
} // namespace overlap

#endif // OVERLAP_HAVE_CUDA

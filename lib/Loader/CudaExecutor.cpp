//===- CudaExecutor.cpp - One rank on a CUDA device -------------*- C++ -*-===//
//
// Runs a program compiled with --target=cuda as one rank alone on a device
// (overlap_cuda_context_create_single): the inputs are made on the host as
// for the host backend and copied to device memory, the entry is called on
// the main thread, the context is synchronized, and the outputs (results and
// arguments) are copied back to the host for the comparison. Built only
// with the CUDA backend (OVERLAP_HAVE_CUDA); otherwise every creation fails
// as "no device".
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/Executor.h"
#include "overlap/Loader/RuntimeApi.h"

#ifdef OVERLAP_HAVE_CUDA

#include "overlap/Runtime/overlap_runtime_cuda.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdlib>
#include <dlfcn.h>

namespace overlap {
namespace exec {

namespace {
// The CUDA runtime's functions this executor calls, found through the
// handle of liboverlap_runtime_cuda.so (which links libcudart): the loader
// links no CUDA library (only its headers are used here).
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
  X(cudaDeviceSynchronize)                                                     \
  X(cudaStreamCreateWithFlags)

struct CudaRt {
#define OVERLAP_CUDART_MEMBER(NAME) decltype(&::NAME) NAME = nullptr;
  OVERLAP_CUDART_FUNCTIONS(OVERLAP_CUDART_MEMBER)
#undef OVERLAP_CUDART_MEMBER
  /// MgpuWrappers.cpp in liboverlap_runtime_cuda.so.
  void *(*mgpuMemAlloc)(uint64_t, void *, bool) = nullptr;
};

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

std::string cudaText(cudaError_t e) {
  return std::string(cu().cudaGetErrorName(e)) + " (" +
         cu().cudaGetErrorString(e) + ")";
}

class CudaExecutor : public Executor {
public:
  CudaExecutor(overlap_context *ctx, int device) : ctx(ctx), device(device) {}
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
    outcome.run.sig = &sig;
    outcome.run.seed = seed;
    outcome.run.ranks.clear();
    outcome.run.ranks.resize(1);
    run::RankData &data = outcome.run.ranks[0];
    if (!run::prepareRank(sig, seed, /*rank=*/0, data,
                          outcome.run.given ? &(*outcome.run.given)[0]
                                            : nullptr)) {
      error = data.error;
      return false;
    }
    std::vector<void *> deviceArgs(sig.args.size(), nullptr);
    auto freeDeviceArgs = [&] {
      for (void *ptr : deviceArgs)
        rt().overlap_free(ctx, ptr);
    };
    auto fail = [&](const std::string &why) {
      freeDeviceArgs();
      error = why;
      return false;
    };
    for (size_t i = 0; i < sig.args.size(); ++i) {
      size_t bytes = sig.args[i].numElements() * sig.args[i].elemBytes();
      if (rt().overlap_alloc(ctx, bytes, &deviceArgs[i]) != OVERLAP_SUCCESS)
        return fail(std::string("allocating ") + sig.args[i].name + ": " +
                    rt().overlap_last_error(ctx));
    }
    const int runs = checkedRuns(iterations);
    for (int it = 0; it < runs; ++it) {
      if (it > 0)
        run::freeResults(sig, data, releaseResult);
      // Fresh inputs each time: arguments may be updated in place.
      for (size_t i = 0; i < sig.args.size(); ++i) {
        const run::BufferSpec &spec = sig.args[i];
        cudaError_t e = cu().cudaMemcpy(deviceArgs[i], data.args[i].data,
                                        spec.numElements() * spec.elemBytes(),
                                        cudaMemcpyHostToDevice);
        if (e != cudaSuccess)
          return fail("copying " + spec.name +
                      " to the device: " + cudaText(e));
        data.argDescriptors[i] = run::contiguousDescriptor(spec, deviceArgs[i]);
      }
      run::resetResultStorage(sig, data);
      std::vector<void *> values = run::entryValues(sig, data, ctx);
      // Nothing of the inputs' copies or the last run's frees is left for
      // the clock.
      cudaError_t ready = cu().cudaDeviceSynchronize();
      if (ready != cudaSuccess)
        return fail("cudaDeviceSynchronize before the entry: " +
                    cudaText(ready));
      // Only the last run, whose outputs are compared, is poisoned: the
      // others time the entry call and the synchronize alone.
      run::setPoisoning(it + 1 == runs);
      auto start = std::chrono::steady_clock::now();
      callCInterface(lib.entry, values);
      overlap_status status = rt().overlap_context_synchronize(ctx);
      // Kernels on streams the program made itself (mgpuStreamCreate) are
      // not the context's; a failed context may have streams still stuck.
      cudaError_t e = status == OVERLAP_SUCCESS ? cu().cudaDeviceSynchronize()
                                                : cudaSuccess;
      const double ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count();
      run::setPoisoning(true);
      if (isTimedRun(it, iterations))
        outcome.iterationMs.push_back(ms);
      if (status != OVERLAP_SUCCESS)
        return fail(std::string(rt().overlap_status_name(status)) + ": " +
                    rt().overlap_last_error(ctx));
      if (e != cudaSuccess)
        return fail("cudaDeviceSynchronize after the entry: " + cudaText(e));
    }
    std::string why;
    if (!run::collectOutputs(outcome.run, outcome.outputs, why))
      return fail(why);
    cudaError_t copyError = cudaSuccess;
    if (!run::copyViewsToHost(sig, outcome.outputs[0], data,
                              [&](void *dst, const void *src, size_t bytes) {
                                copyError = cu().cudaMemcpy(dst, src, bytes,
                                                            cudaMemcpyDefault);
                                return copyError == cudaSuccess;
                              }))
      return fail("copying the outputs to the host: " + cudaText(copyError));
    freeDeviceArgs();
    return true;
  }

  void release(const Library &lib, Outcome &outcome) override {
    for (run::RankData &data : outcome.run.ranks)
      run::freeResults(lib.sig, data, releaseResult);
  }

private:
  overlap_context *ctx;
  int device;
};
} // namespace

bool haveCudaBackend() { return true; }

std::unique_ptr<Executor> createCudaExecutor(int device, int64_t waitTimeoutMs,
                                             bool &noDevice,
                                             std::string &error) {
  noDevice = false;
  if (!rt().hasCuda()) {
    noDevice = true;
    error = "the runtime " + rt().path +
            " has no CUDA backend (liboverlap_runtime_cuda.so is built only "
            "where CMake finds CUDA, NCCL and cuBLASLt)";
    return nullptr;
  }
  if (!bindCudaRt(cudaRt, error))
    return nullptr;
  const char *why = nullptr;
  int count = rt().overlap_cuda_device_count(&why);
  if (count == 0) {
    noDevice = true;
    error = std::string("no CUDA device (") +
            (why && *why ? why : "cudaGetDeviceCount found none") + ")";
    return nullptr;
  }
  if (device < 0 || device >= count) {
    error = "--device " + std::to_string(device) + ": this machine has " +
            std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s");
    return nullptr;
  }
  overlap_cuda_options options;
  rt().overlap_cuda_options_init(&options);
  options.wait_timeout_ms = waitTimeoutMs;
  overlap_context *ctx = nullptr;
  if (rt().overlap_cuda_context_create_single(device, &options, &ctx) !=
      OVERLAP_SUCCESS) {
    error = std::string("cannot create a CUDA context: ") +
            rt().overlap_cuda_create_error();
    return nullptr;
  }
  cudaError_t e =
      cu().cudaStreamCreateWithFlags(&poisonStream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    rt().overlap_cuda_context_destroy(ctx);
    error = "cudaStreamCreateWithFlags: " + cudaText(e);
    return nullptr;
  }
  return std::make_unique<CudaExecutor>(ctx, device);
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

} // namespace exec
} // namespace overlap

#endif // OVERLAP_HAVE_CUDA

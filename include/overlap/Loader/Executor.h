//===- Executor.h - Run a loaded program on a backend -----------*- C++ -*-===//
//
// overlap-exec's view of a library from `overlap-compile --emit=so` (its
// embedded signature and entry point) and of a backend that runs it: host
// ranks as threads, or one rank on a CUDA device.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_EXECUTOR_H
#define OVERLAP_LOADER_EXECUTOR_H

#include "overlap/Loader/ElfImports.h"
#include "overlap/Loader/Run.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace overlap {
namespace exec {

/// A loaded program: a private copy of its file, so that a program
/// recompiled to the same path is loaded afresh, never the one an earlier
/// run of this process left loaded. Closed when destroyed (host programs
/// only: a CUDA program's module destructors need the device context, which
/// may be gone by then).
struct Library {
  std::string path;
  void *handle = nullptr;
  run::Signature sig;
  /// Its C interface, `_mlir_ciface_<entry>`.
  void *entry = nullptr;

  Library() = default;
  Library(const Library &) = delete;
  Library &operator=(const Library &) = delete;
  ~Library();
};

/// The most values a C-interface call takes here: the result pointer, the
/// context and the argument descriptors.
constexpr size_t kMaxEntryValues = 64;

/// Calls `fn(values[0], values[1], ...)`, every value a pointer (the C
/// interface of an entry); at most kMaxEntryValues values.
void callCInterface(void *fn, const std::vector<void *> &values);

/// The last run of one program, until Executor::release.
struct Outcome {
  /// The ranks' data: inputs, descriptors, host copies of device outputs.
  run::Run run;
  /// Every output of every rank in host memory, [rank][output].
  std::vector<std::vector<run::OutputView>> outputs;
  /// Per timed run: the wall time of the entry call (CUDA: and of the
  /// synchronize after it) on the slowest rank, in milliseconds.
  std::vector<double> iterationMs;
};

/// How many runs `iterations` means (--iters): one run, poisoned, timed and
/// compared; or, for more, `iterations` timed runs whose allocations are
/// not poisoned (their times hold the entry call alone, not the filling of
/// its buffers), then one more, poisoned and not timed, whose outputs are
/// compared.
int checkedRuns(int iterations);

/// Whether run `run` (0-based, of checkedRuns(iterations)) is timed.
bool isTimedRun(int run, int iterations);

/// The runs of checkedRuns(iterations) that the host executors (threads,
/// processes) make: before each but the first, `release` frees the last
/// run's results; only the last run is poisoned (its outputs are the ones
/// compared); `launch` runs once and gives each outcome's time in ms
/// (`ms[i]` for `outcomes[i]`), or returns false; a timed run's times go
/// to each outcome's iterationMs.
bool runChecked(int iterations, const std::vector<Outcome *> &outcomes,
                const std::function<void()> &release,
                const std::function<bool(std::vector<double> &ms)> &launch);

/// Points `outcome`'s run at `lib`'s signature and entry, with `seed` (what
/// every executor does before its runs).
void bindProgram(const Library &lib, uint64_t seed, Outcome &outcome);

/// dlopens `path` (from `overlap-compile --emit=so`) and reads its embedded
/// signature and entry point into `lib`. Only a regular file is opened (a
/// FIFO would block, a directory or device is no program); its bytes are
/// read once, checked (checkElfImage: no segment past the end of a
/// truncated file) and written to a private copy that dlopen maps, next to
/// the file (so that its $ORIGIN rpath holds) or else in $TMPDIR, and that
/// is unlinked at once. The entry must be a function defined in that
/// library, the signature a NUL-terminated string in it. On failure returns
/// false with the reason in `message`.
bool loadLibrary(const std::string &path, Library &lib, std::string &message);

class Executor {
public:
  virtual ~Executor() = default;
  /// "4 host ranks", for the report's first line.
  virtual std::string where() const = 0;
  /// "host", "cuda": the first word of the timing line.
  virtual const char *backend() const = 0;
  /// The allocators whose imports are redirected to poisoning versions.
  virtual std::vector<ImportRedirect> poisonedImports() const = 0;
  /// Runs `lib` checkedRuns(iterations) times with the inputs of `seed`
  /// (made again for each run, since arguments may be updated in place),
  /// poisoning allocations in the last run only; the times of the timed
  /// runs and the outputs of the last run stay in `outcome`. On failure
  /// returns false with the reason in `error`.
  virtual bool execute(const Library &lib, uint64_t seed, int iterations,
                       Outcome &outcome, std::string &error) = 0;
  /// Frees what the program allocated for the outputs of `outcome`.
  virtual void release(const Library &lib, Outcome &outcome) = 0;
  /// A program and its reference on this executor, as execute() each, on
  /// the same contexts where the backend allows (a GPU's one context; the
  /// host executor's ranks run both in one launch): state one leaves in a
  /// context, signal sets and groups by their keys, meets the other as on
  /// a GPU. On failure `referenceFailed` says which run failed. By
  /// default the two execute() calls.
  virtual bool executePair(const Library &program, const Library &reference,
                           uint64_t seed, int iterations,
                           Outcome &programOutcome, Outcome &referenceOutcome,
                           bool &referenceFailed, std::string &error) {
    referenceFailed = false;
    if (!execute(program, seed, iterations, programOutcome, error))
      return false;
    referenceFailed = true;
    return execute(reference, seed, iterations, referenceOutcome, error);
  }
};

/// malloc, aligned_alloc and overlap_alloc to Run's poisoning
/// versions (host memory).
std::vector<ImportRedirect> hostPoisonedImports();

/// What the executors of host ranks (threads, processes) share: the
/// backend's name, the poisoned imports, and "N host rank(s)" plus `how`.
class HostRanksExecutor : public Executor {
public:
  HostRanksExecutor(int ranks, const overlap_host_options &options,
                    std::string how = "")
      : ranks(ranks), options(options), how(std::move(how)) {}
  std::string where() const override {
    return std::to_string(ranks) + " host rank" + (ranks == 1 ? "" : "s") + how;
  }
  const char *backend() const override { return "host"; }
  std::vector<ImportRedirect> poisonedImports() const override {
    return hostPoisonedImports();
  }

protected:
  int ranks;
  overlap_host_options options;
  std::string how;
};

/// `ranks` host ranks as threads (overlap_host_launch).
std::unique_ptr<Executor>
createHostExecutor(int ranks, const overlap_host_options &options);

/// Whether this build has the CUDA backend (OVERLAP_HAVE_CUDA).
bool haveCudaBackend();

/// One rank alone on CUDA device `device` (overlap_cuda_context_create_single).
/// Fails with `error` when there is no device (`noDevice` set: exit status
/// 3) or the context cannot be made. Without the CUDA backend it always
/// fails with noDevice.
std::unique_ptr<Executor> createCudaExecutor(int device, int64_t waitTimeoutMs,
                                             bool &noDevice,
                                             std::string &error);

/// This process's rank of a job a launcher started, one process per GPU
/// (`mpirun -np N`, `srun`, `torchrun --nproc-per-node N`): rank `rank` of
/// `size` (the process layer's, overlap_process_init), its device by local
/// rank (CUDA_VISIBLE_DEVICES respected), its NCCL communicator
/// bootstrapped from the launcher (overlap_cuda_context_create_launched).
/// Collective: the processes agree that each has a device before the
/// bootstrap, and that each made its context after it; `noDevice` (where
/// this process has none, its reason in `error`) when any has none. Runs
/// agree before each entry call; rank 0 gathers every rank's outputs.
std::unique_ptr<Executor> createCudaProcessExecutor(int rank, int size,
                                                    int64_t waitTimeoutMs,
                                                    bool &noDevice,
                                                    std::string &error);

/// A --target=cuda program that a framework calls on its own device
/// buffers and stream (overlap.jax.jit on GPUs: one process and one GPU per
/// rank). Each call is ordered on the caller's `stream` (CudaLayerOrder.h):
/// the inputs are copied into buffers of the layer's own (a program may
/// reuse an argument's buffer) with cudaMemcpyAsync on `stream`, the
/// context's streams wait for an event recorded after them, the entry is
/// called and the host waits for the context (its bounded waits and errors
/// surface there), then `stream` waits for the context's streams and the
/// results are copied into `outputs` on it. Nothing is on the legacy
/// default stream, which neither XLA's nor the context's streams are
/// ordered with.
class DeviceLayer {
public:
  virtual ~DeviceLayer() = default;
  /// One call: `inputs[a]` the device pointer of argument a, `outputs[i]`
  /// where result i goes (contiguous, the signature's type and shape).
  /// `inputBytes` / `outputBytes`, when not null, are the buffers' sizes: one
  /// that is not its argument's or result's is refused before any copy.
  virtual bool call(void *stream, const void *const *inputs,
                    const size_t *inputBytes, size_t numInputs,
                    void *const *outputs, const size_t *outputBytes,
                    size_t numOutputs, std::string &error) = 0;
};

/// A CUDA context that device layers share: one rank's streams, NCCL
/// communicator and runtime caches (signal sets by (key, flag count), split
/// groups), made once per process and mesh by the framework
/// (overlap.jax.jit) and used by every layer, input shape and backward on
/// that mesh. Each layer keeps a reference; the context is destroyed with
/// the last one. Calls of the layers on one context are serialized (one
/// runs at a time, from any thread), and each ends with the context's
/// streams drained: two programs never interleave on its streams, so they
/// may share its keyed signal sets (epochs only grow) as overlap-exec's
/// plan and reference do.
class DeviceContext {
public:
  virtual ~DeviceContext() = default;
  /// "" while the context is usable, else why it failed (its first error:
  /// a wait past its bound, a failed collective, a failed call). A failed
  /// context stays failed, for every layer on it.
  virtual std::string failure() = 0;
  virtual int ranks() const = 0;
  virtual int rank() const = 0;
  virtual int device() const = 0;
};

/// Makes rank `rank` of `ranks` on CUDA device `device`, NCCL bootstrapped
/// from `uniqueId` (OVERLAP_CUDA_UNIQUE_ID_BYTES, from rank 0's
/// overlap_cuda_unique_id, passed by the framework's own means), or alone
/// when `ranks` is 1. Collective over the ranks. `waitTimeoutMs` bounds
/// each wait of a call (0: the runtime's default), `initTimeoutMs` NCCL's
/// init (0: $OVERLAP_INIT_TIMEOUT_MS, else unbounded). Fails with `error`
/// (`noDevice` set when there is no device or no CUDA backend).
std::shared_ptr<DeviceContext>
createDeviceContext(const uint8_t *uniqueId, int ranks, int rank, int device,
                    int64_t waitTimeoutMs, int64_t initTimeoutMs,
                    bool &noDevice, std::string &error);

/// Loads `program` (compiled with --target=cuda) as a layer on `context`,
/// which it keeps alive. A failed context is refused with its failure.
std::unique_ptr<DeviceLayer>
createDeviceLayerOn(const std::shared_ptr<DeviceContext> &context,
                    const std::string &program, std::string &error);

/// createDeviceContext, then createDeviceLayerOn: a layer with a context
/// of its own.
///
/// Loads `program` (compiled with --target=cuda) and makes its context:
/// rank `rank` of `ranks` on CUDA device `device`, NCCL bootstrapped from
/// `uniqueId` (OVERLAP_CUDA_UNIQUE_ID_BYTES, from rank 0's
/// overlap_cuda_unique_id, passed by the framework's own means), or alone
/// when `ranks` is 1. Collective over the ranks. `waitTimeoutMs` bounds
/// each wait of a call (0: the runtime's default), `initTimeoutMs` NCCL's
/// init (0: $OVERLAP_INIT_TIMEOUT_MS, else unbounded). Fails with `error`
/// (`noDevice` set when there is no device or no CUDA backend).
std::unique_ptr<DeviceLayer>
createDeviceLayer(const std::string &program, const uint8_t *uniqueId,
                  int ranks, int rank, int device, int64_t waitTimeoutMs,
                  int64_t initTimeoutMs, bool &noDevice, std::string &error);

/// Rank 0's NCCL unique id for createDeviceLayer; false with `error`
/// (`noDevice` set) without a device or the CUDA backend.
bool cudaUniqueId(uint8_t *id, bool &noDevice, std::string &error);

} // namespace exec
} // namespace overlap

#endif // OVERLAP_LOADER_EXECUTOR_H

//===- Run.h - Run programs and view their outputs --------------*- C++ -*-===//
//
// What overlap-run (JIT) and overlap-exec (dlopen) share once a program is
// compiled: the entry signature and its embedded text form, seeded inputs,
// memref descriptors, the poisoning allocators, a run on host ranks and
// the checked views of its outputs (their comparison and report are in
// Compare.h). No MLIR and no LLVM: this links into overlap-exec, which runs
// where neither is installed. It calls the runtime's C ABI through the
// table of the runtime the loader found and loaded (RuntimeApi.h), and
// links no runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_RUN_H
#define OVERLAP_LOADER_RUN_H

#include "overlap/Artifact/Signature.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace overlap {
namespace run {

// The signature types and functions (overlap/Artifact/Signature.h), by
// their loader names.
using namespace ::overlap::artifact;

//===----------------------------------------------------------------------===//
// Poison
//===----------------------------------------------------------------------===//

// Replacements for the allocators a compiled program calls: the memory
// starts as all-ones bytes, a NaN in f32, f16 and bf16, so that a result
// the program forgets to write, or reads before it is written, shows up as
// NaN instead of as stale data. overlap-run registers them with its JIT,
// overlap-exec redirects the loaded program's imports to them.
void *poisonedMalloc(size_t bytes);
void *poisonedAlignedAlloc(size_t alignment, size_t bytes);
/// The program's free: the block is no longer one of the program's (see
/// freeResults).
void trackedFree(void *ptr);
/// Host backend only (CUDA memory is not addressable from the host).
overlap_status poisonedOverlapAlloc(overlap_context *ctx, size_t bytes,
                                    void **ptr);

/// Whether the replacements above (and the CUDA executor's) poison what they
/// allocate: on by default. overlap-exec turns it off for the runs it only
/// times, so that their times hold the entry call alone, not the filling
/// of its buffers (nor, on CUDA, the wait for the streams before it).
void setPoisoning(bool on);
bool poisoning();

//===----------------------------------------------------------------------===//
// Inputs, descriptors and runs
//===----------------------------------------------------------------------===//

/// A buffer of the host, 64-byte aligned like the runtime's. `data` is null
/// when the allocation failed: check it before use.
struct HostBuffer {
  void *data = nullptr;
  HostBuffer() = default;
  explicit HostBuffer(size_t bytes);
  HostBuffer(HostBuffer &&other) : data(other.data) { other.data = nullptr; }
  HostBuffer &operator=(HostBuffer &&other);
  HostBuffer(const HostBuffer &) = delete;
  HostBuffer &operator=(const HostBuffer &) = delete;
  ~HostBuffer();
};

/// A memref descriptor as MLIR lays it out: allocated and aligned pointers,
/// offset, sizes, strides, all 64-bit.
size_t descriptorWords(size_t rank);

/// The descriptor of a contiguous row-major buffer of `spec` at `data`.
std::vector<int64_t> contiguousDescriptor(const BufferSpec &spec, void *data);

/// Fills an argument: uniform in [-1, 1] with splitmix64 from
/// seed + rank * 1000003 + index, never all zeros; f16/bf16 through the
/// runtime's conversions.
void fillArgument(const BufferSpec &spec, void *data, uint64_t seed, int rank,
                  size_t index);

/// One rank's state for one run: its argument buffers (made on the host) and
/// the descriptors passed to the entry, and the storage the C interface
/// writes the result descriptors to.
struct RankData {
  std::vector<HostBuffer> args;
  std::vector<std::vector<int64_t>> argDescriptors;
  std::vector<int64_t> results;
  /// Host copies of outputs that live elsewhere (device memory).
  std::vector<HostBuffer> copies;
  /// Wall time of the entry call on this rank, in milliseconds.
  double callMs = 0;
  /// Why prepareRank failed (then the entry was not called).
  std::string error;
};

/// Words of `RankData::results` past the result descriptors the signature
/// declares, filled with kResultGuard: a program whose code returns more
/// (or higher-rank) results than its signature says writes there, which
/// outputViews reports instead of the heap being corrupted.
constexpr size_t kResultGuardWords = 32;
constexpr int64_t kResultGuard = 0x4f564c5047554152; // "OVLPGUAR"

/// The bytes the host holds for the arguments and results of a run of
/// `sig` on `ranks` ranks must stay within a budget: OVERLAP_MAX_RUN_BYTES
/// when set (a decimal number of bytes), else the machine's physical
/// memory. On failure returns false naming the largest buffer, what it
/// needs and the budget in `error`.
bool checkRunBytes(const Signature &sig, int ranks, std::string &error);

/// The size a dynamic dimension of an argument takes in a run without
/// given inputs: 2 x the number of ranks (every group size divides it).
int64_t seededDynamicSize(int ranks);

/// Sets the dynamic sizes ("?") of `sig`'s arguments: from `shapes`
/// (argument i's shape where shapes[i] is not empty: the caller's inputs,
/// the same on every rank) or seededDynamicSize. A given shape whose rank
/// or static sizes differ from the signature's is an error naming the
/// argument.
bool resolveArgumentShapes(Signature &sig, int ranks,
                           const std::vector<std::vector<int64_t>> &shapes,
                           std::string &error);

/// The caller's inputs, [rank][argument]: each a contiguous row-major host
/// buffer of the argument's spec (f16/bf16 as their 16-bit patterns), read
/// while the run makes its inputs and copied, so a run never writes them.
using GivenInputs = std::vector<std::vector<const void *>>;

/// Whether `inputs` has one buffer (not null) per argument for each of
/// `ranks` ranks; on failure returns false and says what is missing in
/// `error`.
bool checkGivenInputs(const Signature &sig, const GivenInputs &inputs,
                      int ranks, std::string &error);

/// Makes rank `rank`'s inputs in host memory, seeded (fillArgument) or
/// copied from `given` (the rank's buffers, one per argument) when it is not
/// null, with descriptors that point at them, and poisons its result
/// descriptors (all -1: a result the program does not return is caught by
/// resultView's check). On failure (no memory for an argument) returns false
/// with the reason in `data.error`.
bool prepareRank(const Signature &sig, uint64_t seed, int rank, RankData &data,
                 const std::vector<const void *> *given = nullptr);

/// Poisons a rank's result storage for a run: the declared descriptors all
/// -1, the kResultGuardWords after them kResultGuard. prepareRank does it
/// once; an executor that calls the entry again on the same storage does it
/// before each call (all -1 would overwrite the guard, and every run would
/// look as if the program wrote past its results).
void resetResultStorage(const Signature &sig, RankData &data);

/// The values of the C-interface call
///   _mlir_ciface_<name>([results *,] ctx, arg descriptors *...),
/// pointing into `data`.
std::vector<void *> entryValues(const Signature &sig, RankData &data,
                                overlap_context *ctx);

/// Calls a program's entry with entryValues' values.
using EntryCall = std::function<void(std::vector<void *> &values)>;

/// Why a framework's buffers for one rank's call do not fit `sig` ("" when
/// they do): the first whose size (`inputBytes[a]`, `outputBytes[i]`; a
/// null array is not checked) is not its argument's or result's. A call
/// naming a live layer with other buffers must not reach the program.
std::string bufferSizeMisfit(const Signature &sig, const size_t *inputBytes,
                             const size_t *outputBytes);

/// Calls `call` with `values` on `ctx`'s rank inside the runtime's
/// overlap_context_call_guarded: a failed run-time check of the program
/// fails `ctx` (its status and last error say why) and returns here instead
/// of aborting the process.
overlap_status callGuarded(overlap_context *ctx, const EntryCall &call,
                           std::vector<void *> &values);

/// One run of one program on every rank.
struct Run {
  const Signature *sig = nullptr;
  EntryCall call;
  uint64_t seed = 0;
  /// Not null: the caller's inputs instead of the seeded ones.
  const GivenInputs *given = nullptr;
  std::vector<RankData> ranks;
};

/// Runs `runs` one after another on the same `ranks` host ranks and so on
/// the same contexts (one overlap_host_launch; each rank synchronizes its
/// context after each run), as a GPU runs a program and its reference on
/// one context: what one program leaves in a context (signal sets by
/// their keys, split groups) is there for the next. Each run's ranks'
/// data stay in it; `failedRun` is the index of the run whose rank
/// failed. On failure returns false with the runtime's error text.
bool launchManyOnHost(const std::vector<Run *> &runs, int ranks,
                      const overlap_host_options &options, size_t &failedRun,
                      std::string &error);

/// Runs `run` on `ranks` ranks of the host backend (overlap_host_launch: one
/// thread per rank): each rank makes its inputs and calls the entry. The
/// wall time of the whole launch goes to `millis`. On failure returns false
/// with the runtime's error text in `error`.
bool launchOnHost(Run &run, int ranks, const overlap_host_options &options,
                  double &millis, std::string &error);

/// Frees, with `release`, the result buffers the program allocated (those
/// that are not one of the arguments) and marks them freed. Of descriptors
/// that do not match the signature only the words that are blocks of the
/// program's malloc or aligned_alloc (not yet freed) are freed.
void freeResults(const Signature &sig, RankData &data,
                 void (*release)(void *) = std::free);
void freeResults(const Signature &sig, Run &run);

//===----------------------------------------------------------------------===//
// Outputs and their comparison
//===----------------------------------------------------------------------===//

/// One output of one rank: base pointer (at the offset), sizes and strides
/// in elements.
struct OutputView {
  const void *base = nullptr;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;

  /// The element offset of `index` (one entry per dim) from `base`.
  int64_t offsetOf(const std::vector<int64_t> &index) const {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d)
      offset += index[d] * strides[d];
    return offset;
  }
};

/// Sets the dynamic sizes of `sig`'s results from the outputs of a run
/// ([rank][output], outputViews' order): every rank's must agree (an
/// output has one shape), else an error naming the result and the ranks.
bool resolveResultShapes(Signature &sig,
                         const std::vector<std::vector<OutputView>> &outputs,
                         std::string &error);

/// Every output of a rank that finished: the results, then the arguments
/// (which the program may update in place). Before any output is read, each
/// result descriptor is checked against the signature: the guard words
/// after the declared descriptors untouched, non-null pointers, the sizes
/// of the signature, an offset and strides >= 0 whose last element's
/// offset does not overflow, and, for a result in an argument's buffer,
/// every element inside that buffer. On failure returns false and says
/// which result is wrong in `error`.
bool outputViews(const Signature &sig, const RankData &data,
                 std::vector<OutputView> &views, std::string &error);

/// outputViews of every rank of a finished run, [rank][output]; on failure
/// returns false with the rank and the reason in `error`.
bool collectOutputs(const Run &run,
                    std::vector<std::vector<OutputView>> &outputs,
                    std::string &error);

/// Copies what each view spans into a new host buffer of `data.copies` with
/// `copy(dst, src, bytes)` and points the view there (for outputs in device
/// memory). On failure returns false.
bool copyViewsToHost(
    const Signature &sig, std::vector<OutputView> &views, RankData &data,
    const std::function<bool(void *, const void *, size_t)> &copy);

/// The specs of the outputs in outputViews' order: results, then arguments.
std::vector<const BufferSpec *> outputSpecs(const Signature &sig);

/// A loader allocation that failed, saying which: runSession reports it as
/// an error (a plain std::bad_alloc as one in the loader).
class OutOfMemory : public std::bad_alloc {
public:
  explicit OutOfMemory(std::string text) : text(std::move(text)) {}
  const char *what() const noexcept override { return text.c_str(); }

private:
  std::string text;
};

/// Copies the elements of `view` (of `spec`'s type and shape, any strides)
/// into `out` as a contiguous row-major buffer; throws OutOfMemory, naming
/// the buffer and its size, when that buffer cannot be allocated.
void copyContiguous(const BufferSpec &spec, const OutputView &view,
                    std::vector<char> &out);

} // namespace run
} // namespace overlap

#endif // OVERLAP_LOADER_RUN_H

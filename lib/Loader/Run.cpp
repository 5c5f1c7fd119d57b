//===- Run.cpp - Run programs and compare their outputs ---------*- C++ -*-===//
//
// The MLIR-free half of overlap-run, shared with overlap-exec: signatures
// and their text form, inputs, descriptors, poison, host runs, comparison
// and report. Plain C++17 on the runtime's C ABI.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/Run.h"
#include "overlap/Loader/RuntimeApi.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>
#include <unistd.h>
#include <unordered_set>

namespace overlap {
namespace run {

using exec::rt;

//===----------------------------------------------------------------------===//
// Poison
//===----------------------------------------------------------------------===//

static std::atomic<bool> poisonOn{true};

void setPoisoning(bool on) { poisonOn.store(on, std::memory_order_relaxed); }

bool poisoning() { return poisonOn.load(std::memory_order_relaxed); }

// The blocks that the program's malloc and aligned_alloc handed out and its
// free did not take back. The pointers of a result descriptor that does not
// match the signature may be anything, so freeResults frees only pointers
// found here: without it, every such run left its results behind, a leak
// in a long-lived host (found by the ASan run of the loader's tests).
static std::mutex programBlocksMutex;
static std::unordered_set<void *> &programBlocks() {
  static auto *blocks = new std::unordered_set<void *>();
  return *blocks;
}

static void *trackBlock(void *ptr) {
  if (ptr) {
    std::lock_guard<std::mutex> lock(programBlocksMutex);
    programBlocks().insert(ptr);
  }
  return ptr;
}

/// Whether `ptr` is a block of the program's that it has not freed; it is
/// no longer tracked afterwards (the caller frees it).
static bool untrackBlock(void *ptr) {
  std::lock_guard<std::mutex> lock(programBlocksMutex);
  return programBlocks().erase(ptr) > 0;
}

void *poisonedMalloc(size_t bytes) {
  void *ptr = std::malloc(bytes);
  if (ptr && poisoning())
    std::memset(ptr, 0xff, bytes);
  return trackBlock(ptr);
}

void *poisonedAlignedAlloc(size_t alignment, size_t bytes) {
  void *ptr = std::aligned_alloc(alignment, bytes);
  if (ptr && poisoning())
    std::memset(ptr, 0xff, bytes);
  return trackBlock(ptr);
}

void trackedFree(void *ptr) {
  if (ptr)
    untrackBlock(ptr);
  std::free(ptr);
}

overlap_status poisonedOverlapAlloc(overlap_context *ctx, size_t bytes,
                                    void **ptr) {
  overlap_status status = rt().overlap_alloc(ctx, bytes, ptr);
  if (status == OVERLAP_SUCCESS && *ptr && poisoning())
    std::memset(*ptr, 0xff, bytes);
  return status;
}

//===----------------------------------------------------------------------===//
// Inputs, descriptors and runs
//===----------------------------------------------------------------------===//

HostBuffer::HostBuffer(size_t bytes) {
  // Rounded up to whole cache lines plus one, without wrapping around.
  if (bytes <= std::numeric_limits<size_t>::max() - 128)
    data = std::aligned_alloc(64, ((bytes + 63) / 64) * 64 + 64);
}

HostBuffer &HostBuffer::operator=(HostBuffer &&other) {
  std::swap(data, other.data);
  return *this;
}

HostBuffer::~HostBuffer() { std::free(data); }

size_t descriptorWords(size_t rank) { return 3 + 2 * rank; }

std::vector<int64_t> contiguousDescriptor(const BufferSpec &spec, void *data) {
  size_t rank = spec.shape.size();
  std::vector<int64_t> words(descriptorWords(rank));
  words[0] = reinterpret_cast<int64_t>(data);
  words[1] = reinterpret_cast<int64_t>(data);
  words[2] = 0;
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    words[3 + d] = spec.shape[d];
    words[3 + rank + d] = stride;
    stride *= spec.shape[d];
  }
  return words;
}

namespace {
/// splitmix64: a small generator whose sequence is the same everywhere.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1].
  float uniform() {
    double u = static_cast<double>(next() >> 11) * 0x1.0p-53;
    return static_cast<float>(2.0 * u - 1.0);
  }
};
} // namespace

void fillArgument(const BufferSpec &spec, void *data, uint64_t seed, int rank,
                  size_t index) {
  SplitMix64 rng{seed + static_cast<uint64_t>(rank) * 1000003ULL + index};
  // Integers: small values of both signs (-8 .. 7) from the uniform one.
  auto small = [](auto &out, float value) {
    out = static_cast<std::remove_reference_t<decltype(out)>>(
        std::floor(value * 16) - 8);
  };
  int64_t n = spec.numElements();
  bool allZero = true;
  for (int64_t i = 0; i < n; ++i) {
    float value = rng.uniform();
    if (i == n - 1 && allZero && value == 0.0f)
      value = 0.5f;
    allZero &= value == 0.0f;
    switch (spec.elem) {
    case Elem::F32:
      static_cast<float *>(data)[i] = value;
      break;
    case Elem::F16:
      static_cast<uint16_t *>(data)[i] = rt().overlap_f32_to_f16(value);
      break;
    case Elem::BF16:
      static_cast<uint16_t *>(data)[i] = rt().overlap_f32_to_bf16(value);
      break;
    case Elem::F64:
      static_cast<double *>(data)[i] = value;
      break;
    // Integers stay small, so that sums and products mean something; i1
    // is 0 or 1, one per byte.
    case Elem::I1:
      static_cast<uint8_t *>(data)[i] = value >= 0.5f;
      break;
    case Elem::I8:
      small(static_cast<int8_t *>(data)[i], value);
      break;
    case Elem::I16:
      small(static_cast<int16_t *>(data)[i], value);
      break;
    case Elem::I32:
      small(static_cast<int32_t *>(data)[i], value);
      break;
    case Elem::I64:
      small(static_cast<int64_t *>(data)[i], value);
      break;
    }
  }
}

int64_t seededDynamicSize(int ranks) { return 2 * std::max(ranks, 1); }

static std::string shapeText(const std::vector<int64_t> &shape) {
  BufferSpec spec;
  spec.shape = shape;
  std::string type = spec.typeString();
  return type.substr(0, type.rfind('x'));
}

bool resolveArgumentShapes(Signature &sig, int ranks,
                           const std::vector<std::vector<int64_t>> &shapes,
                           std::string &error) {
  for (size_t i = 0; i < sig.args.size(); ++i) {
    BufferSpec &spec = sig.args[i];
    if (!spec.isDynamic())
      continue;
    const std::vector<int64_t> *given =
        i < shapes.size() && !shapes[i].empty() ? &shapes[i] : nullptr;
    if (given && given->size() != spec.shape.size()) {
      error = spec.name + " (" + spec.typeString() + ") is given with " +
              std::to_string(given->size()) + " dimensions";
      return false;
    }
    std::vector<int64_t> shape = spec.shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] != kDynamicExtent) {
        if (given && (*given)[d] != shape[d]) {
          error = spec.name + " (" + spec.typeString() +
                  ") is given with size " + std::to_string((*given)[d]) +
                  " in dimension " + std::to_string(d);
          return false;
        }
        continue;
      }
      shape[d] = given ? (*given)[d] : seededDynamicSize(ranks);
    }
    spec.shape = std::move(shape);
    if (!spec.checkedBytes()) {
      error = spec.name + " (" + spec.typeString() + ") overflows";
      return false;
    }
  }
  return true;
}

bool resolveResultShapes(Signature &sig,
                         const std::vector<std::vector<OutputView>> &outputs,
                         std::string &error) {
  for (size_t i = 0; i < sig.results.size(); ++i) {
    BufferSpec &spec = sig.results[i];
    if (!spec.isDynamic() || outputs.empty() || outputs[0].size() <= i)
      continue;
    const std::vector<int64_t> &first = outputs[0][i].sizes;
    for (size_t r = 1; r < outputs.size(); ++r)
      if (outputs[r].size() > i && outputs[r][i].sizes != first) {
        error = spec.name + " (" + spec.typeString() + ") is " +
                shapeText(first) + " on rank 0 and " +
                shapeText(outputs[r][i].sizes) + " on rank " +
                std::to_string(r) + ": the loader takes one shape per output";
        return false;
      }
    spec.shape = first;
  }
  return true;
}

bool checkGivenInputs(const Signature &sig, const GivenInputs &inputs,
                      int ranks, std::string &error) {
  if (inputs.size() != static_cast<size_t>(ranks)) {
    error = "inputs for " + std::to_string(inputs.size()) + " rank" +
            (inputs.size() == 1 ? "" : "s") + ", but the run has " +
            std::to_string(ranks);
    return false;
  }
  for (size_t r = 0; r < inputs.size(); ++r) {
    if (inputs[r].size() != sig.args.size()) {
      error = "rank " + std::to_string(r) + ": " +
              std::to_string(inputs[r].size()) + " inputs, but @" + sig.name +
              " takes " + std::to_string(sig.args.size()) + " arguments";
      return false;
    }
    for (size_t i = 0; i < inputs[r].size(); ++i)
      if (!inputs[r][i]) {
        error = "rank " + std::to_string(r) + ": no buffer for " +
                sig.args[i].name + " (" + sig.args[i].typeString() + ")";
        return false;
      }
  }
  return true;
}

bool checkRunBytes(const Signature &sig, int ranks, std::string &error) {
  uint64_t budget = 0;
  std::string source;
  if (const char *env = std::getenv("OVERLAP_MAX_RUN_BYTES")) {
    std::string text = env;
    bool ok = !text.empty() && text.size() <= 19 &&
              text.find_first_not_of("0123456789") == std::string::npos;
    if (ok)
      budget = std::stoull(text);
    if (!ok || budget == 0) {
      error = "OVERLAP_MAX_RUN_BYTES='" + text +
              "': expected a number of bytes > 0";
      return false;
    }
    source = "OVERLAP_MAX_RUN_BYTES";
  } else {
    long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || pageSize <= 0 ||
        __builtin_mul_overflow(static_cast<uint64_t>(pages),
                               static_cast<uint64_t>(pageSize), &budget))
      budget = std::numeric_limits<uint64_t>::max();
    source = "the machine's memory; OVERLAP_MAX_RUN_BYTES sets another";
  }
  uint64_t perRank = 0, total = 0;
  const BufferSpec *largest = nullptr;
  uint64_t largestBytes = 0;
  bool overflow = false;
  for (const std::vector<BufferSpec> *list : {&sig.args, &sig.results}) {
    for (const BufferSpec &spec : *list) {
      std::optional<uint64_t> bytes = spec.checkedBytes();
      overflow |= !bytes ||
                  __builtin_add_overflow(perRank, bytes.value_or(0), &perRank);
      if (!largest || bytes.value_or(UINT64_MAX) > largestBytes) {
        largest = &spec;
        largestBytes = bytes.value_or(UINT64_MAX);
      }
    }
  }
  overflow |= __builtin_mul_overflow(
      perRank, static_cast<uint64_t>(std::max(ranks, 1)), &total);
  if (!overflow && total <= budget)
    return true;
  auto count = [](uint64_t bytes) {
    return bytes == UINT64_MAX ? std::string("more than 2^64")
                               : std::to_string(bytes);
  };
  error = largest->name + " (" + largest->typeString() + ") needs " +
          count(largestBytes) + " bytes on each of " + std::to_string(ranks) +
          " rank" + (ranks == 1 ? "" : "s") + "; the arguments and results " +
          "of @" + sig.name + " need " + count(overflow ? UINT64_MAX : total) +
          " bytes of host memory in all, more than the loader's budget of " +
          std::to_string(budget) + " bytes (" + source + ")";
  return false;
}

bool prepareRank(const Signature &sig, uint64_t seed, int rank, RankData &data,
                 const std::vector<const void *> *given) {
  data = RankData();
  for (size_t i = 0; i < sig.args.size(); ++i) {
    const BufferSpec &spec = sig.args[i];
    size_t bytes = spec.numElements() * spec.elemBytes();
    data.args.emplace_back(bytes);
    if (!data.args.back().data) {
      data.error = "rank " + std::to_string(rank) + ": cannot allocate " +
                   std::to_string(bytes) + " bytes for " + spec.name + " (" +
                   spec.typeString() + ")";
      return false;
    }
    if (given)
      std::memcpy(data.args.back().data, (*given)[i], bytes);
    else
      fillArgument(spec, data.args.back().data, seed, rank, i);
    data.argDescriptors.push_back(
        contiguousDescriptor(spec, data.args.back().data));
  }
  resetResultStorage(sig, data);
  return true;
}

void resetResultStorage(const Signature &sig, RankData &data) {
  size_t resultWords = 0;
  for (const BufferSpec &spec : sig.results)
    resultWords += descriptorWords(spec.shape.size());
  data.results.assign(resultWords, -1);
  data.results.resize(resultWords + kResultGuardWords, kResultGuard);
}

std::vector<void *> entryValues(const Signature &sig, RankData &data,
                                overlap_context *ctx) {
  std::vector<void *> values;
  if (!sig.results.empty())
    values.push_back(data.results.data());
  values.push_back(ctx);
  for (std::vector<int64_t> &descriptor : data.argDescriptors)
    values.push_back(descriptor.data());
  return values;
}

std::string bufferSizeMisfit(const Signature &sig, const size_t *inputBytes,
                             const size_t *outputBytes) {
  auto check = [&](const char *what, const size_t *given,
                   const std::vector<BufferSpec> &specs) -> std::string {
    for (size_t i = 0; given && i < specs.size(); ++i) {
      size_t want = specs[i].numElements() * specs[i].elemBytes();
      if (given[i] != want)
        return "@" + sig.name + "'s " + what + " " + std::to_string(i) +
               " has " + std::to_string(want) +
               " bytes per rank, but the call's buffer has " +
               std::to_string(given[i]);
    }
    return "";
  };
  std::string why = check("input", inputBytes, sig.args);
  return why.empty() ? check("output", outputBytes, sig.results) : why;
}

overlap_status callGuarded(overlap_context *ctx, const EntryCall &call,
                           std::vector<void *> &values) {
  struct Pending {
    const EntryCall *call;
    std::vector<void *> *values;
  } pending{&call, &values};
  // Between the guard and the program's frames only this function's and
  // std::function's: nothing with a destructor is live there.
  return rt().overlap_context_call_guarded(
      ctx,
      [](void *p) {
        auto *pending = static_cast<Pending *>(p);
        (*pending->call)(*pending->values);
      },
      &pending);
}

static double millisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// The rank thread's body: make this rank's inputs, then call the entry.
static void hostRankMain(overlap_context *ctx, void *user) {
  Run &run = *static_cast<Run *>(user);
  int rank = rt().overlap_context_rank(ctx);
  RankData &data = run.ranks[rank];
  // A rank without its inputs does not call the entry: launchOnHost
  // reports why (the other ranks' collectives time out).
  if (!prepareRank(*run.sig, run.seed, rank, data,
                   run.given ? &(*run.given)[rank] : nullptr))
    return;
  std::vector<void *> values = entryValues(*run.sig, data, ctx);
  auto start = std::chrono::steady_clock::now();
  callGuarded(ctx, run.call, values); // a failed check failed the context
  data.callMs = millisSince(start);
}

namespace {
/// What launchManyOnHost hands each rank: the runs, and the furthest run
/// any rank has started (a failure the ranks did not record is that run's).
struct ManyRuns {
  std::vector<Run *> runs;
  std::atomic<size_t> furthest{0};
};
} // namespace

/// Each rank of launchManyOnHost: every run in turn on this one context.
static void hostRanksMain(overlap_context *ctx, void *user) {
  auto &many = *static_cast<ManyRuns *>(user);
  int rank = rt().overlap_context_rank(ctx);
  for (size_t i = 0; i < many.runs.size(); ++i) {
    size_t seen = many.furthest.load();
    while (seen < i && !many.furthest.compare_exchange_weak(seen, i))
      ;
    Run *run = many.runs[i];
    hostRankMain(ctx, run);
    if (!run->ranks[rank].error.empty())
      return;
    // The run's work is done on this rank before the next one starts (the
    // CUDA executor synchronizes its context the same way).
    if (rt().overlap_context_synchronize(ctx) != OVERLAP_SUCCESS)
      return;
  }
}

bool launchManyOnHost(const std::vector<Run *> &runs, int ranks,
                      const overlap_host_options &options, size_t &failedRun,
                      std::string &error) {
  for (Run *run : runs) {
    run->ranks.clear();
    run->ranks.resize(ranks);
  }
  ManyRuns many;
  many.runs = runs;
  overlap_status status =
      rt().overlap_host_launch(ranks, &options, hostRanksMain, &many);
  failedRun = runs.size();
  for (size_t i = 0; i < runs.size(); ++i)
    for (const RankData &data : runs[i]->ranks)
      if (!data.error.empty()) {
        failedRun = i;
        error = data.error;
        return false;
      }
  if (status != OVERLAP_SUCCESS) {
    failedRun = many.furthest.load();
    error = std::string(rt().overlap_status_name(status)) + ": " +
            rt().overlap_host_launch_error();
    return false;
  }
  return true;
}

bool launchOnHost(Run &run, int ranks, const overlap_host_options &options,
                  double &millis, std::string &error) {
  run.ranks.clear();
  run.ranks.resize(ranks);
  auto start = std::chrono::steady_clock::now();
  overlap_status status =
      rt().overlap_host_launch(ranks, &options, hostRankMain, &run);
  millis = millisSince(start);
  for (const RankData &data : run.ranks)
    if (!data.error.empty()) {
      error = data.error;
      return false;
    }
  if (status != OVERLAP_SUCCESS) {
    error = std::string(rt().overlap_status_name(status)) + ": " +
            rt().overlap_host_launch_error();
    return false;
  }
  return true;
}

static bool resultGuardIntact(const Signature &sig, const RankData &data,
                              std::string &error);
static bool resultView(const Signature &sig, const RankData &data, size_t index,
                       OutputView &view, std::string &error);

void freeResults(const Signature &sig, RankData &data,
                 void (*release)(void *)) {
  std::vector<int64_t> freed;
  for (const std::vector<int64_t> &arg : data.argDescriptors)
    freed.push_back(arg[0]);
  // What a program that does not match its signature left may be anything:
  // of its words, only blocks its own malloc returned are freed.
  auto releaseProgramBlocks = [&](size_t from, size_t to) {
    for (size_t w = from; w < to && w < data.results.size(); ++w) {
      int64_t word = data.results[w];
      if (std::find(freed.begin(), freed.end(), word) != freed.end() ||
          !untrackBlock(reinterpret_cast<void *>(word)))
        continue;
      freed.push_back(word);
      release(reinterpret_cast<void *>(word));
    }
  };
  std::string why;
  if (!resultGuardIntact(sig, data, why)) {
    releaseProgramBlocks(0, data.results.size());
    return;
  }
  size_t offset = 0;
  for (size_t i = 0; i < sig.results.size(); ++i) {
    const BufferSpec &spec = sig.results[i];
    size_t words = descriptorWords(spec.shape.size());
    int64_t &allocated = data.results[offset];
    OutputView view;
    if (!resultView(sig, data, i, view, why)) {
      releaseProgramBlocks(offset, offset + words);
      offset += words;
      continue;
    }
    offset += words;
    if (std::find(freed.begin(), freed.end(), allocated) != freed.end())
      continue;
    freed.push_back(allocated);
    untrackBlock(reinterpret_cast<void *>(allocated));
    release(reinterpret_cast<void *>(allocated));
  }
}

void freeResults(const Signature &sig, Run &run) {
  for (RankData &data : run.ranks)
    freeResults(sig, data);
}

//===----------------------------------------------------------------------===//
// Outputs and their comparison
//===----------------------------------------------------------------------===//

/// Words of the result descriptors `sig` declares.
static size_t resultWords(const Signature &sig) {
  size_t words = 0;
  for (const BufferSpec &spec : sig.results)
    words += descriptorWords(spec.shape.size());
  return words;
}

/// Whether the program left the guard words after the declared result
/// descriptors alone (and the rank made its storage at all).
static bool resultGuardIntact(const Signature &sig, const RankData &data,
                              std::string &error) {
  size_t declared = resultWords(sig);
  if (data.results.size() != declared + kResultGuardWords) {
    error = "the rank did not run the program";
    return false;
  }
  for (size_t i = declared; i < data.results.size(); ++i) {
    if (data.results[i] == kResultGuard)
      continue;
    error = "the program wrote result descriptors past the " +
            std::to_string(declared) + " words its signature declares (" +
            std::to_string(sig.results.size()) +
            " results): the code returns more, or higher-rank, results "
            "than the signature says";
    return false;
  }
  return true;
}

/// Reads the descriptor of result `index` from a rank's result storage and
/// checks it against the signature (outputViews says what is checked).
static bool resultView(const Signature &sig, const RankData &data, size_t index,
                       OutputView &view, std::string &error) {
  size_t offset = 0;
  for (size_t i = 0; i < index; ++i)
    offset += descriptorWords(sig.results[i].shape.size());
  const BufferSpec &spec = sig.results[index];
  const int64_t *words = data.results.data() + offset;
  size_t rank = spec.shape.size();
  auto fail = [&](const std::string &why) {
    error = spec.name + ": " + why;
    return false;
  };
  if (words[1] == 0 || words[1] == -1)
    return fail("the program returned no buffer");
  if (words[0] == 0 || words[0] == -1)
    return fail("the returned descriptor has no allocated pointer");
  // A dynamic size is the descriptor's (resolveResultShapes).
  bool empty = false;
  for (size_t d = 0; d < rank; ++d) {
    if (spec.shape[d] == kDynamicExtent ? words[3 + d] < 0
                                        : words[3 + d] != spec.shape[d])
      return fail(
          "the returned descriptor has size " + std::to_string(words[3 + d]) +
          " in dimension " + std::to_string(d) + ", expected " +
          (spec.shape[d] == kDynamicExtent ? std::string("a size >= 0")
                                           : std::to_string(spec.shape[d])));
    empty |= words[3 + d] == 0;
  }
  int64_t elem = static_cast<int64_t>(spec.elemBytes());
  // The offset in elements of the last element from `aligned`: every
  // element then lies in [aligned + offset, aligned + last] (strides >= 0).
  int64_t last = words[2];
  if (last < 0)
    return fail("the returned descriptor has offset " + std::to_string(last) +
                ", expected >= 0");
  for (size_t d = 0; d < rank && !empty; ++d) {
    int64_t stride = words[3 + rank + d], reach;
    if (stride < 0)
      return fail("the returned descriptor has stride " +
                  std::to_string(stride) + " in dimension " +
                  std::to_string(d) + ", expected >= 0");
    if (__builtin_mul_overflow(words[3 + d] - 1, stride, &reach) ||
        __builtin_add_overflow(last, reach, &last))
      return fail("the strides of the returned descriptor overflow");
  }
  int64_t endByte;
  uintptr_t endAddress;
  if (__builtin_mul_overflow(last + 1, elem, &endByte) ||
      __builtin_add_overflow(static_cast<uintptr_t>(words[1]),
                             static_cast<uintptr_t>(endByte), &endAddress))
    return fail("the returned descriptor reaches past the address space");
  // A result in an argument's buffer (updated in place) must lie in it.
  for (size_t a = 0; a < sig.args.size() && !empty; ++a) {
    const std::vector<int64_t> &arg = data.argDescriptors[a];
    if (words[0] != arg[0])
      continue;
    int64_t argBytes = static_cast<int64_t>(sig.args[a].numElements() *
                                            sig.args[a].elemBytes());
    int64_t start = words[1] - arg[0], end;
    if (start < 0 || __builtin_add_overflow(start, endByte, &end) ||
        end > argBytes)
      return fail("the returned descriptor reaches outside the buffer of " +
                  sig.args[a].name + ", which it says it uses");
  }
  view = OutputView();
  view.base = reinterpret_cast<const char *>(words[1]) + words[2] * elem;
  for (size_t d = 0; d < rank; ++d) {
    view.sizes.push_back(words[3 + d]);
    view.strides.push_back(words[3 + rank + d]);
  }
  return true;
}

static OutputView argumentView(const BufferSpec &spec, const RankData &data,
                               size_t index) {
  const std::vector<int64_t> &words = data.argDescriptors[index];
  size_t rank = spec.shape.size();
  OutputView view;
  view.base = reinterpret_cast<const void *>(words[1]);
  for (size_t d = 0; d < rank; ++d) {
    view.sizes.push_back(words[3 + d]);
    view.strides.push_back(words[3 + rank + d]);
  }
  return view;
}

bool outputViews(const Signature &sig, const RankData &data,
                 std::vector<OutputView> &views, std::string &error) {
  views.clear();
  if (!resultGuardIntact(sig, data, error))
    return false;
  for (size_t i = 0; i < sig.results.size(); ++i) {
    OutputView view;
    if (!resultView(sig, data, i, view, error))
      return false;
    views.push_back(std::move(view));
  }
  for (size_t i = 0; i < sig.args.size(); ++i)
    views.push_back(argumentView(sig.args[i], data, i));
  return true;
}

bool collectOutputs(const Run &run,
                    std::vector<std::vector<OutputView>> &outputs,
                    std::string &error) {
  outputs.assign(run.ranks.size(), {});
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    std::string why;
    if (!outputViews(*run.sig, run.ranks[r], outputs[r], why)) {
      error = "rank " + std::to_string(r) + ": " + why;
      return false;
    }
  }
  return true;
}

std::vector<const BufferSpec *> outputSpecs(const Signature &sig) {
  std::vector<const BufferSpec *> specs;
  for (const BufferSpec &spec : sig.results)
    specs.push_back(&spec);
  for (const BufferSpec &spec : sig.args)
    specs.push_back(&spec);
  return specs;
}

void copyContiguous(const BufferSpec &spec, const OutputView &view,
                    std::vector<char> &out) {
  size_t elem = spec.elemBytes();
  int64_t count = spec.numElements();
  size_t bytes = 0;
  bool wraps = count < 0 ||
               __builtin_mul_overflow(static_cast<size_t>(count), elem, &bytes);
  auto shape = [&] {
    std::string text;
    for (int64_t size : view.sizes)
      text += (text.empty() ? "" : "x") + std::to_string(size);
    return text.empty() ? std::string("a scalar") : text;
  };
  try {
    if (wraps)
      throw std::bad_alloc();
    out.resize(bytes);
  } catch (const std::bad_alloc &) {
    throw OutOfMemory(
        "cannot allocate the host copy of output " + spec.name + " (" +
        shape() + ", " +
        (wraps ? std::string("more than 2^64") : std::to_string(bytes)) +
        " bytes): out of memory");
  }
  size_t rank = view.sizes.size();
  std::vector<int64_t> index(rank, 0);
  const char *base = static_cast<const char *>(view.base);
  for (int64_t n = 0; n < count; ++n) {
    std::memcpy(out.data() + n * elem, base + view.offsetOf(index) * elem,
                elem);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < view.sizes[d])
        break;
      index[d] = 0;
    }
  }
}

bool copyViewsToHost(
    const Signature &sig, std::vector<OutputView> &views, RankData &data,
    const std::function<bool(void *, const void *, size_t)> &copy) {
  std::vector<const BufferSpec *> specs = outputSpecs(sig);
  for (size_t i = 0; i < views.size(); ++i) {
    OutputView &view = views[i];
    // Elements from the base to the last one the strides reach.
    int64_t extent = 1;
    for (size_t d = 0; d < view.sizes.size(); ++d) {
      if (view.sizes[d] == 0)
        extent = 0;
      else if (extent)
        extent += (view.sizes[d] - 1) * view.strides[d];
    }
    size_t bytes = static_cast<size_t>(extent) * specs[i]->elemBytes();
    data.copies.emplace_back(bytes);
    if (!data.copies.back().data ||
        (bytes && !copy(data.copies.back().data, view.base, bytes)))
      return false;
    view.base = data.copies.back().data;
  }
  return true;
}

} // namespace run
} // namespace overlap

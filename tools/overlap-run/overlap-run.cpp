//===- overlap-run.cpp - Run on host ranks against a reference --*- C++ -*-===//
//
// Compiles the entry function twice in this process -- with overlap (the
// chosen strategy) and as a reference (strategy none: one matmul, then one
// collective) -- JITs both, runs each on the runtime's host backend with R
// ranks as threads and the same seeded random inputs per rank, and compares
// every rank's outputs (results, and arguments, which may be updated in
// place) between the two.
//
// Exit status: 0 when every output matches, 1 on a mismatch, 2 on a usage,
// compile or runtime error.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include "overlap/Runtime/overlap_runtime.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

using namespace mlir;
namespace cl = llvm::cl;

namespace {
cl::OptionCategory category("overlap-run options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .mlir>"),
                               cl::Required, cl::cat(category));
cl::opt<int> ranks("ranks",
                   cl::desc("Number of ranks (threads); must equal the size "
                            "of the module's grid"),
                   cl::Required, cl::cat(category));
cl::opt<std::string> entry("entry",
                           cl::desc("Function to run (default: the only "
                                    "public function with a body)"),
                           cl::init(""), cl::cat(category));
cl::opt<uint64_t> seed("seed", cl::desc("Seed of the random inputs"),
                       cl::init(1), cl::cat(category));
cl::opt<std::string> profile("profile",
                             cl::desc("Hardware profile: a JSON path or a "
                                      "name in profiles/"),
                             cl::init("h100-nvlink-datasheet"),
                             cl::cat(category));
cl::opt<std::string> strategy("strategy",
                              cl::desc("Tiling strategy of the overlap "
                                       "compilation (the reference uses "
                                       "none)"),
                              cl::init("auto"), cl::cat(category));
cl::opt<std::string>
    chaos("chaos",
          cl::desc("Host chaos mode with this seed (random delays before "
                   "stream work), for both runs; default: "
                   "$OVERLAP_HOST_CHAOS"),
          cl::value_desc("seed"), cl::init(""), cl::cat(category));
cl::opt<int64_t> chaosMaxUs("chaos-max-us",
                            cl::desc("Longest chaos delay in microseconds "
                                     "(0: the runtime's default)"),
                            cl::init(0), cl::cat(category));
cl::opt<int64_t> waitTimeoutMs("wait-timeout-ms",
                               cl::desc("Timeout of waits and collectives "
                                        "(0: the runtime's default)"),
                               cl::init(0), cl::cat(category));
cl::opt<bool> testingDropWaits(
    "testing-drop-waits",
    cl::desc("Testing only: compile the overlap program without waits "
             "(the reference keeps them); with --chaos it must mismatch"),
    cl::init(false), cl::cat(category));
cl::opt<double> relTolerance("rtol",
                             cl::desc("Relative tolerance (default 0: exact)"),
                             cl::init(0.0), cl::cat(category));
cl::opt<double> absTolerance("atol",
                             cl::desc("Absolute tolerance (default 0: exact)"),
                             cl::init(0.0), cl::cat(category));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimization level (0-3)"),
                           cl::Prefix, cl::init(2), cl::cat(category));
cl::opt<bool> noRemarks("no-remarks",
                        cl::desc("Do not print the passes' remarks (plans)"),
                        cl::init(false), cl::cat(category));
} // namespace

static constexpr const char *kTool = "overlap-run";

static int usageOrCompileError(const llvm::Twine &message) {
  llvm::errs() << kTool << ": error: " << message << "\n";
  return 2;
}

//===----------------------------------------------------------------------===//
// Signature of the entry function
//===----------------------------------------------------------------------===//

namespace {
enum class Elem { F32, F16, BF16 };

/// One argument or result of the entry function as the host sees it: a
/// contiguous row-major buffer of a static shape.
struct BufferSpec {
  std::string name;
  Elem elem;
  SmallVector<int64_t> shape;
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  size_t elemBytes() const { return elem == Elem::F32 ? 4 : 2; }
  std::string typeString() const {
    std::string s;
    for (int64_t d : shape)
      s += std::to_string(d) + "x";
    return s + (elem == Elem::F32 ? "f32" : elem == Elem::F16 ? "f16" : "bf16");
  }
};

struct Signature {
  std::string name;
  std::vector<BufferSpec> args;
  std::vector<BufferSpec> results;
};
} // namespace

static FailureOr<BufferSpec> specFor(Type type, std::string name,
                                     llvm::raw_ostream &errs) {
  auto shaped = dyn_cast<ShapedType>(type);
  auto memref = dyn_cast<MemRefType>(type);
  if (!shaped || !(isa<RankedTensorType>(type) || memref) ||
      !shaped.hasStaticShape() ||
      (memref && !memref.getLayout().isIdentity())) {
    errs << kTool << ": error: " << name << " has type " << type
         << "; overlap-run handles statically shaped tensors and "
            "identity-layout memrefs\n";
    return failure();
  }
  BufferSpec spec;
  spec.name = std::move(name);
  Type elem = shaped.getElementType();
  if (elem.isF32())
    spec.elem = Elem::F32;
  else if (elem.isF16())
    spec.elem = Elem::F16;
  else if (elem.isBF16())
    spec.elem = Elem::BF16;
  else {
    errs << kTool << ": error: " << spec.name << " has element type " << elem
         << "; overlap-run handles f32, f16 and bf16\n";
    return failure();
  }
  spec.shape.assign(shaped.getShape().begin(), shaped.getShape().end());
  return spec;
}

static FailureOr<Signature> signatureOf(func::FuncOp func,
                                        llvm::raw_ostream &errs) {
  Signature sig;
  sig.name = func.getSymName().str();
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto spec = specFor(type, "arg" + std::to_string(i), errs);
    if (failed(spec))
      return failure();
    sig.args.push_back(*spec);
  }
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    auto spec = specFor(type, "result" + std::to_string(i), errs);
    if (failed(spec))
      return failure();
    sig.results.push_back(*spec);
  }
  return sig;
}

/// Every grid's size must be the number of ranks: the program splits its
/// groups from the world's ranks by the grid coordinates.
static LogicalResult checkGrids(ModuleOp module, int numRanks,
                                llvm::raw_ostream &errs) {
  for (auto grid : module.getOps<shard::GridOp>()) {
    int64_t size = 1;
    for (int64_t extent : grid.getShape()) {
      if (ShapedType::isDynamic(extent)) {
        errs << kTool << ": error: grid @" << grid.getSymName()
             << " has a dynamic extent; overlap-run needs static grids\n";
        return failure();
      }
      size *= extent;
    }
    if (size != numRanks) {
      errs << kTool << ": error: --ranks " << numRanks << " but grid @"
           << grid.getSymName() << " has " << size
           << " devices; the number of ranks must equal the grid's size\n";
      return failure();
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Memory the JIT'd program allocates is poisoned
//===----------------------------------------------------------------------===//

// Every allocation of the compiled program (memref.alloc lowers to malloc)
// starts as all-ones bytes, a NaN in f32, f16 and bf16: a result the
// program forgets to write, or reads before it is written, shows up as NaN
// instead of as stale zeros.
static void *poisonedMalloc(size_t bytes) {
  void *ptr = std::malloc(bytes);
  if (ptr)
    std::memset(ptr, 0xff, bytes);
  return ptr;
}

static void *poisonedAlignedAlloc(size_t alignment, size_t bytes) {
  void *ptr = std::aligned_alloc(alignment, bytes);
  if (ptr)
    std::memset(ptr, 0xff, bytes);
  return ptr;
}

static overlap_status poisonedOverlapAlloc(overlap_context *ctx, size_t bytes,
                                           void **ptr) {
  overlap_status status = overlap_alloc(ctx, bytes, ptr);
  if (status == OVERLAP_SUCCESS && *ptr)
    std::memset(*ptr, 0xff, bytes);
  return status;
}

/// The runtime's C ABI and the poisoning allocators, by name, for the JIT.
/// Registered explicitly (rather than found among the process's symbols) so
/// that resolution does not depend on how the tool was linked.
static llvm::orc::SymbolMap
runtimeSymbols(llvm::orc::MangleAndInterner mangle) {
  llvm::orc::SymbolMap map;
  auto add = [&](llvm::StringRef name, auto *fn) {
    map[mangle(name)] = {
        llvm::orc::ExecutorAddr::fromPtr(reinterpret_cast<void *>(fn)),
        llvm::JITSymbolFlags::Exported};
  };
#define OVERLAP_SYMBOL(fn) add(#fn, &fn)
  OVERLAP_SYMBOL(overlap_status_name);
  OVERLAP_SYMBOL(overlap_last_error);
  OVERLAP_SYMBOL(overlap_context_status);
  OVERLAP_SYMBOL(overlap_host_options_init);
  OVERLAP_SYMBOL(overlap_host_launch);
  OVERLAP_SYMBOL(overlap_host_launch_error);
  OVERLAP_SYMBOL(overlap_context_rank);
  OVERLAP_SYMBOL(overlap_context_size);
  OVERLAP_SYMBOL(overlap_context_num_streams);
  OVERLAP_SYMBOL(overlap_context_world);
  OVERLAP_SYMBOL(overlap_stream_synchronize);
  OVERLAP_SYMBOL(overlap_context_synchronize);
  OVERLAP_SYMBOL(overlap_group_split);
  OVERLAP_SYMBOL(overlap_group_rank);
  OVERLAP_SYMBOL(overlap_group_size);
  OVERLAP_SYMBOL(overlap_group_destroy);
  OVERLAP_SYMBOL(overlap_free);
  OVERLAP_SYMBOL(overlap_memcpy);
  OVERLAP_SYMBOL(overlap_launch_host_func);
  OVERLAP_SYMBOL(overlap_gemm);
  OVERLAP_SYMBOL(overlap_all_reduce);
  OVERLAP_SYMBOL(overlap_reduce_scatter);
  OVERLAP_SYMBOL(overlap_all_gather);
  OVERLAP_SYMBOL(overlap_barrier);
  OVERLAP_SYMBOL(overlap_signals_create);
  OVERLAP_SYMBOL(overlap_signals_acquire);
  OVERLAP_SYMBOL(overlap_signals_next_epoch);
  OVERLAP_SYMBOL(overlap_signals_destroy);
  OVERLAP_SYMBOL(overlap_signal);
  OVERLAP_SYMBOL(overlap_wait);
  OVERLAP_SYMBOL(overlap_pack);
  OVERLAP_SYMBOL(overlap_unpack);
  OVERLAP_SYMBOL(overlap_f32_to_f16);
  OVERLAP_SYMBOL(overlap_f16_to_f32);
  OVERLAP_SYMBOL(overlap_f32_to_bf16);
  OVERLAP_SYMBOL(overlap_bf16_to_f32);
  OVERLAP_SYMBOL(overlap_dtype_size);
#undef OVERLAP_SYMBOL
  add("overlap_alloc", &poisonedOverlapAlloc);
  add("malloc", &poisonedMalloc);
  add("aligned_alloc", &poisonedAlignedAlloc);
  return map;
}

//===----------------------------------------------------------------------===//
// Inputs, descriptors and one run on the host backend
//===----------------------------------------------------------------------===//

namespace {
/// A buffer of the host, 64-byte aligned like the runtime's.
struct HostBuffer {
  void *data = nullptr;
  HostBuffer() = default;
  explicit HostBuffer(size_t bytes)
      : data(std::aligned_alloc(64, ((bytes + 63) / 64) * 64 + 64)) {}
  HostBuffer(HostBuffer &&other) : data(other.data) { other.data = nullptr; }
  HostBuffer &operator=(HostBuffer &&other) {
    std::swap(data, other.data);
    return *this;
  }
  ~HostBuffer() { std::free(data); }
};

/// A memref descriptor as MLIR lays it out: allocated and aligned pointers,
/// offset, sizes, strides, all 64-bit.
static size_t descriptorWords(size_t rank) { return 3 + 2 * rank; }

/// One rank's state for one run: its argument buffers and their
/// descriptors, and the storage the C interface writes the results to.
struct RankData {
  std::vector<HostBuffer> args;
  std::vector<std::vector<int64_t>> argDescriptors;
  std::vector<int64_t> results;
};

struct Run {
  const Signature *sig = nullptr;
  void (*entry)(void **) = nullptr;
  uint64_t seed = 0;
  std::vector<RankData> ranks;
};

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

/// Fills an argument: uniform in [-1, 1] from seed + rank * 1000003 + index,
/// never all zeros.
static void fillArgument(const BufferSpec &spec, void *data, uint64_t seed,
                         int rank, size_t index) {
  SplitMix64 rng{seed + static_cast<uint64_t>(rank) * 1000003ULL + index};
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
      static_cast<uint16_t *>(data)[i] = overlap_f32_to_f16(value);
      break;
    case Elem::BF16:
      static_cast<uint16_t *>(data)[i] = overlap_f32_to_bf16(value);
      break;
    }
  }
}

static std::vector<int64_t> contiguousDescriptor(const BufferSpec &spec,
                                                 void *data) {
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

/// The rank thread's body: make this rank's inputs, then call the entry
/// through its C interface:
///   _mlir_ciface_<name>([results *,] ctx, arg descriptors *...).
static void rankMain(overlap_context *ctx, void *user) {
  Run &run = *static_cast<Run *>(user);
  int rank = overlap_context_rank(ctx);
  RankData &data = run.ranks[rank];
  const Signature &sig = *run.sig;
  for (auto [i, spec] : llvm::enumerate(sig.args)) {
    data.args.emplace_back(spec.numElements() * spec.elemBytes());
    fillArgument(spec, data.args.back().data, run.seed, rank, i);
    data.argDescriptors.push_back(
        contiguousDescriptor(spec, data.args.back().data));
  }
  size_t resultWords = 0;
  for (const BufferSpec &spec : sig.results)
    resultWords += descriptorWords(spec.shape.size());
  // The result descriptors are poisoned too: a result the program does not
  // return is caught by the descriptor check.
  data.results.assign(resultWords, -1);

  std::vector<void *> values;
  if (!sig.results.empty())
    values.push_back(data.results.data());
  values.push_back(ctx);
  for (std::vector<int64_t> &descriptor : data.argDescriptors)
    values.push_back(descriptor.data());
  std::vector<void *> packed;
  for (void *&value : values)
    packed.push_back(&value);
  run.entry(packed.data());
}

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

static float loadElement(Elem elem, const void *base, int64_t index) {
  switch (elem) {
  case Elem::F32:
    return static_cast<const float *>(base)[index];
  case Elem::F16:
    return overlap_f16_to_f32(static_cast<const uint16_t *>(base)[index]);
  case Elem::BF16:
    return overlap_bf16_to_f32(static_cast<const uint16_t *>(base)[index]);
  }
  return 0;
}

static uint32_t loadBits(Elem elem, const void *base, int64_t index) {
  if (elem == Elem::F32) {
    uint32_t bits;
    std::memcpy(&bits, static_cast<const char *>(base) + 4 * index, 4);
    return bits;
  }
  return static_cast<const uint16_t *>(base)[index];
}

namespace {
/// A view of one output of one rank: base pointer (at the offset), sizes and
/// strides in elements.
struct OutputView {
  const void *base = nullptr;
  SmallVector<int64_t> sizes;
  SmallVector<int64_t> strides;
};

struct OutputStats {
  double maxAbs = 0;
  double maxRel = 0;
  bool bitIdentical = true;
  int64_t mismatches = 0;
  int64_t nans = 0;
  // First mismatch, for the message.
  int firstRank = -1;
  int64_t firstIndex = -1;
  float firstGot = 0, firstWant = 0;
};
} // namespace

/// Reads the descriptor of result `index` from a rank's result storage and
/// checks it against the signature.
static FailureOr<OutputView> resultView(const Signature &sig,
                                        const RankData &data, size_t index,
                                        std::string &error) {
  size_t offset = 0;
  for (size_t i = 0; i < index; ++i)
    offset += descriptorWords(sig.results[i].shape.size());
  const BufferSpec &spec = sig.results[index];
  const int64_t *words = data.results.data() + offset;
  size_t rank = spec.shape.size();
  OutputView view;
  auto *aligned = reinterpret_cast<const char *>(words[1]);
  if (!aligned || words[1] == -1) {
    error = spec.name + ": the program returned no buffer";
    return failure();
  }
  view.base = aligned + words[2] * static_cast<int64_t>(spec.elemBytes());
  for (size_t d = 0; d < rank; ++d) {
    if (words[3 + d] != spec.shape[d]) {
      error = spec.name + ": the returned descriptor has size " +
              std::to_string(words[3 + d]) + " in dimension " +
              std::to_string(d) + ", expected " + std::to_string(spec.shape[d]);
      return failure();
    }
    view.sizes.push_back(words[3 + d]);
    view.strides.push_back(words[3 + rank + d]);
  }
  return view;
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

/// Compares `got` (overlap) against `want` (reference) element by element:
/// an element matches when |got - want| <= absTolerance + relTolerance *
/// |want|; a NaN (poison that leaked, or an invalid result) never matches.
static void compareOutput(Elem elem, const OutputView &got,
                          const OutputView &want, int rank,
                          OutputStats &stats) {
  int64_t n = 1;
  for (int64_t size : got.sizes)
    n *= size;
  size_t dims = got.sizes.size();
  SmallVector<int64_t> index(dims, 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    int64_t gotOffset = 0, wantOffset = 0;
    for (size_t d = 0; d < dims; ++d) {
      gotOffset += index[d] * got.strides[d];
      wantOffset += index[d] * want.strides[d];
    }
    float g = loadElement(elem, got.base, gotOffset);
    float w = loadElement(elem, want.base, wantOffset);
    if (loadBits(elem, got.base, gotOffset) !=
        loadBits(elem, want.base, wantOffset))
      stats.bitIdentical = false;
    bool nan = std::isnan(g) || std::isnan(w);
    double abs = nan ? std::numeric_limits<double>::infinity()
                     : std::fabs(static_cast<double>(g) - w);
    double rel = nan        ? std::numeric_limits<double>::infinity()
                 : w != 0   ? abs / std::fabs(static_cast<double>(w))
                 : abs == 0 ? 0.0
                            : std::numeric_limits<double>::infinity();
    stats.nans += nan;
    stats.maxAbs = std::max(stats.maxAbs, abs);
    stats.maxRel = std::max(stats.maxRel, rel);
    bool ok =
        !nan &&
        abs <= absTolerance + relTolerance * std::fabs(static_cast<double>(w));
    if (!ok) {
      if (stats.mismatches == 0) {
        stats.firstRank = rank;
        stats.firstIndex = linear;
        stats.firstGot = g;
        stats.firstWant = w;
      }
      ++stats.mismatches;
    }
    for (size_t d = dims; d-- > 0;) {
      if (++index[d] < got.sizes[d])
        break;
      index[d] = 0;
    }
  }
}

static std::string formatIndex(const BufferSpec &spec, int64_t linear) {
  SmallVector<int64_t> index(spec.shape.size());
  for (size_t d = spec.shape.size(); d-- > 0;) {
    index[d] = linear % spec.shape[d];
    linear /= spec.shape[d];
  }
  std::string s = "[";
  for (auto [i, v] : llvm::enumerate(index))
    s += (i ? ", " : "") + std::to_string(v);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

namespace {
/// One compiled and JIT'd program.
struct Program {
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<ExecutionEngine> engine;
  void (*entry)(void **) = nullptr;
};
} // namespace

static LogicalResult compileAndJit(Program &program,
                                   const overlap::tools::CompileOptions &opts,
                                   llvm::StringRef what,
                                   const std::string &entryName) {
  if (failed(overlap::tools::runStages(
          *program.module, opts, "", kTool, llvm::errs(),
          [](PassManager &pm) { return applyPassManagerCLOptions(pm); }))) {
    llvm::errs() << kTool << ": error: compiling the " << what
                 << " program (strategy " << opts.strategy << ") failed\n";
    return failure();
  }
  overlap::tools::initializeNativeTarget();
  ExecutionEngineOptions engineOptions;
  auto transformer = makeOptimizingTransformer(optLevel, 0, nullptr);
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = optLevel == 0
                                         ? llvm::CodeGenOptLevel::None
                                         : llvm::CodeGenOptLevel::Default;
  // memrefCopy, which finalize-memref-to-llvm calls for copies between
  // non-contiguous memrefs.
  std::string runnerUtils =
      overlap::tools::mlirRunnerUtilsDir() + "/libmlir_c_runner_utils.so";
  SmallVector<llvm::StringRef> libs;
  if (llvm::sys::fs::exists(runnerUtils))
    libs.push_back(runnerUtils);
  engineOptions.sharedLibPaths = libs;
  auto engine = ExecutionEngine::create(*program.module, engineOptions);
  if (!engine) {
    llvm::errs() << kTool << ": error: JIT compilation of the " << what
                 << " program failed: " << llvm::toString(engine.takeError())
                 << "\n";
    return failure();
  }
  program.engine = std::move(*engine);
  program.engine->registerSymbols(runtimeSymbols);
  auto fn = program.engine->lookupPacked("_mlir_ciface_" + entryName);
  if (!fn) {
    llvm::errs() << kTool << ": error: the " << what
                 << " program has no C interface _mlir_ciface_" << entryName
                 << ": " << llvm::toString(fn.takeError()) << "\n";
    return failure();
  }
  program.entry = *fn;
  return success();
}

static LogicalResult launch(Run &run, const overlap_host_options &options,
                            llvm::StringRef what, double &millis) {
  run.ranks.clear();
  run.ranks.resize(ranks);
  auto start = std::chrono::steady_clock::now();
  overlap_status status = overlap_host_launch(ranks, &options, rankMain, &run);
  millis = std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
               .count();
  if (status != OVERLAP_SUCCESS) {
    llvm::errs() << kTool << ": error: the " << what
                 << " run failed: " << overlap_status_name(status) << ": "
                 << overlap_host_launch_error() << "\n";
    return failure();
  }
  return success();
}

/// Frees the result buffers the program allocated (those that are not one of
/// the arguments) of every rank.
static void freeResults(const Signature &sig, Run &run) {
  for (RankData &data : run.ranks) {
    SmallVector<int64_t> freed;
    for (const std::vector<int64_t> &arg : data.argDescriptors)
      freed.push_back(arg[0]);
    size_t offset = 0;
    for (const BufferSpec &spec : sig.results) {
      int64_t allocated = data.results[offset];
      offset += descriptorWords(spec.shape.size());
      if (allocated == 0 || allocated == -1 ||
          llvm::is_contained(freed, allocated))
        continue;
      freed.push_back(allocated);
      std::free(reinterpret_cast<void *>(allocated));
    }
  }
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "Overlap runner: runs a function on host ranks with overlap and as "
          "an unsplit reference, and compares the outputs\n",
          &llvm::errs()))
    return 2;

  if (ranks < 1 || ranks > 1024)
    return usageOrCompileError("--ranks " + llvm::Twine(ranks) +
                               ": give 1 to 1024 ranks");
  if (optLevel > 3)
    return usageOrCompileError("-O" + llvm::Twine(optLevel) +
                               ": the level is 0 to 3");
  if (relTolerance < 0 || absTolerance < 0)
    return usageOrCompileError("--rtol and --atol must not be negative");
  overlap_host_options hostOptions;
  overlap_host_options_init(&hostOptions);
  hostOptions.wait_timeout_ms = waitTimeoutMs;
  hostOptions.chaos_max_delay_us = chaosMaxUs;
  if (!chaos.empty()) {
    unsigned long long chaosSeed;
    if (llvm::getAsUnsignedInteger(chaos, 10, chaosSeed))
      return usageOrCompileError("--chaos '" + chaos +
                                 "': expected an unsigned seed");
    hostOptions.chaos = OVERLAP_CHAOS_ON;
    hostOptions.chaos_seed = chaosSeed;
  }

  std::unique_ptr<MLIRContext> contextOwner =
      overlap::tools::createToolContext();
  MLIRContext &context = *contextOwner;
  std::string errorMessage;
  std::shared_ptr<llvm::SourceMgr> sourceMgr =
      overlap::tools::loadSource(inputFile, errorMessage);
  if (!sourceMgr)
    return usageOrCompileError(errorMessage);
  SourceMgrDiagnosticHandler sourceMgrHandler(*sourceMgr, &context);
  // Remarks of the overlap compilation only (the plan), without the
  // operation dump; the reference compilation's are dropped.
  bool showRemarks = !noRemarks;
  ScopedDiagnosticHandler remarkHandler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Remark)
      return failure();
    if (showRemarks)
      sourceMgrHandler.emitDiagnostic(diag.getLocation(), diag.str(),
                                      DiagnosticSeverity::Remark);
    return success();
  });

  OwningOpRef<ModuleOp> parsed = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!parsed)
    return usageOrCompileError("cannot parse " + inputFile);
  FailureOr<std::string> entryName =
      overlap::tools::selectEntry(*parsed, entry, kTool, llvm::errs());
  if (failed(entryName))
    return 2;
  if (failed(checkGrids(*parsed, ranks, llvm::errs())))
    return 2;
  auto entryFunc = parsed->lookupSymbol<func::FuncOp>(*entryName);
  FailureOr<Signature> sig = signatureOf(entryFunc, llvm::errs());
  if (failed(sig))
    return 2;

  overlap::tools::CompileOptions overlapOptions;
  overlapOptions.profile = profile;
  overlapOptions.strategy = strategy;
  overlapOptions.testingDropWaits = testingDropWaits;
  overlap::tools::CompileOptions referenceOptions;
  referenceOptions.profile = profile;
  referenceOptions.strategy = "none";

  Program overlapProgram, referenceProgram;
  overlapProgram.module = parsed->clone();
  referenceProgram.module = std::move(parsed);
  if (failed(
          compileAndJit(overlapProgram, overlapOptions, "overlap", *entryName)))
    return 2;
  showRemarks = false;
  if (failed(compileAndJit(referenceProgram, referenceOptions, "reference",
                           *entryName)))
    return 2;

  llvm::outs() << kTool << ": @" << *entryName << " on " << ranks
               << " host rank" << (ranks == 1 ? "" : "s") << ", strategy "
               << strategy << (testingDropWaits ? " (waits dropped)" : "")
               << " vs reference none, profile " << profile << ", seed "
               << seed;
  if (!chaos.empty())
    llvm::outs() << ", chaos " << chaos;
  llvm::outs() << "\n";
  llvm::outs().flush();

  Run overlapRun, referenceRun;
  overlapRun.sig = referenceRun.sig = &*sig;
  overlapRun.seed = referenceRun.seed = seed;
  overlapRun.entry = overlapProgram.entry;
  referenceRun.entry = referenceProgram.entry;
  double overlapMs = 0, referenceMs = 0;
  if (failed(launch(overlapRun, hostOptions, "overlap", overlapMs)) ||
      failed(launch(referenceRun, hostOptions, "reference", referenceMs)))
    return 2;

  // Every output of every rank: results first, then the arguments.
  bool allOk = true, allBitIdentical = true;
  auto report = [&](const BufferSpec &spec, const OutputStats &stats) {
    bool ok = stats.mismatches == 0;
    allOk &= ok;
    allBitIdentical &= stats.bitIdentical;
    llvm::outs() << "  " << llvm::left_justify(spec.name, 8) << " "
                 << llvm::left_justify(spec.typeString(), 16) << " max abs err "
                 << llvm::format("%-10.3g", stats.maxAbs) << " max rel err "
                 << llvm::format("%-10.3g", stats.maxRel)
                 << (stats.bitIdentical ? " bit-identical" : "") << "\n";
    if (!ok) {
      llvm::outs() << "    " << stats.mismatches << " element"
                   << (stats.mismatches == 1 ? "" : "s")
                   << " differ over all ranks";
      if (stats.nans)
        llvm::outs() << " (" << stats.nans << " NaN: poison or invalid)";
      llvm::outs() << "; first: rank " << stats.firstRank << " "
                   << formatIndex(spec, stats.firstIndex) << " overlap "
                   << stats.firstGot << " reference " << stats.firstWant
                   << "\n";
    }
  };
  for (auto [i, spec] : llvm::enumerate(sig->results)) {
    OutputStats stats;
    for (int r = 0; r < ranks; ++r) {
      std::string error;
      auto got = resultView(*sig, overlapRun.ranks[r], i, error);
      if (failed(got))
        return usageOrCompileError("overlap run, rank " + llvm::Twine(r) +
                                   ": " + error);
      auto want = resultView(*sig, referenceRun.ranks[r], i, error);
      if (failed(want))
        return usageOrCompileError("reference run, rank " + llvm::Twine(r) +
                                   ": " + error);
      compareOutput(spec.elem, *got, *want, r, stats);
    }
    report(spec, stats);
  }
  for (auto [i, spec] : llvm::enumerate(sig->args)) {
    OutputStats stats;
    for (int r = 0; r < ranks; ++r)
      compareOutput(spec.elem, argumentView(spec, overlapRun.ranks[r], i),
                    argumentView(spec, referenceRun.ranks[r], i), r, stats);
    report(spec, stats);
  }
  freeResults(*sig, overlapRun);
  freeResults(*sig, referenceRun);

  llvm::outs() << "host run: overlap " << llvm::format("%.1f", overlapMs)
               << " ms, reference " << llvm::format("%.1f", referenceMs)
               << " ms (threads on this CPU; not a performance measure)\n";
  llvm::outs() << "bit-identical: " << (allBitIdentical ? "yes" : "no") << "\n";
  llvm::outs() << (allOk ? "OK" : "MISMATCH") << "\n";
  return allOk ? 0 : 1;
}

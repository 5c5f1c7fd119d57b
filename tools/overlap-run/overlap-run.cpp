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
#include "EntrySignature.h"
#include "Registration.h"
#include "RunSupport.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/AsmState.h"
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

#include <cstdint>
#include <cstdlib>
#include <vector>

using namespace mlir;
namespace cl = llvm::cl;
namespace run = ::overlap::run;
namespace tools = mlir::overlap::tools;

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
// Memory the JIT'd program allocates is poisoned
//===----------------------------------------------------------------------===//

// Every allocation of the compiled program (memref.alloc lowers to malloc)
// starts as all-ones bytes, a NaN in f32, f16 and bf16 (RunSupport.h).

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
  add("overlap_alloc", &run::poisonedOverlapAlloc);
  add("malloc", &run::poisonedMalloc);
  add("aligned_alloc", &run::poisonedAlignedAlloc);
  return map;
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
                                   const tools::CompileOptions &opts,
                                   llvm::StringRef what,
                                   const std::string &entryName) {
  if (failed(tools::runStages(
          *program.module, opts, "", kTool, llvm::errs(),
          [](PassManager &pm) { return applyPassManagerCLOptions(pm); }))) {
    llvm::errs() << kTool << ": error: compiling the " << what
                 << " program (strategy " << opts.strategy << ") failed\n";
    return failure();
  }
  tools::initializeNativeTarget();
  ExecutionEngineOptions engineOptions;
  auto transformer = makeOptimizingTransformer(optLevel, 0, nullptr);
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = optLevel == 0
                                         ? llvm::CodeGenOptLevel::None
                                         : llvm::CodeGenOptLevel::Default;
  // memrefCopy, which finalize-memref-to-llvm calls for copies between
  // non-contiguous memrefs.
  std::string runnerUtils =
      tools::mlirRunnerUtilsDir() + "/libmlir_c_runner_utils.so";
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

static LogicalResult launch(run::Run &program,
                            const overlap_host_options &options,
                            llvm::StringRef what, double &millis) {
  std::string error;
  if (!run::launchOnHost(program, ranks, options, millis, error)) {
    llvm::errs() << kTool << ": error: the " << what << " run failed: " << error
                 << "\n";
    return failure();
  }
  return success();
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
  std::string flagError;
  if (!run::checkTimeFlags(waitTimeoutMs, chaosMaxUs, flagError))
    return usageOrCompileError(flagError);
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

  std::unique_ptr<MLIRContext> contextOwner = tools::createToolContext();
  MLIRContext &context = *contextOwner;
  std::string errorMessage;
  std::shared_ptr<llvm::SourceMgr> sourceMgr =
      tools::loadSource(inputFile, errorMessage);
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
      tools::selectEntry(*parsed, entry, kTool, llvm::errs());
  if (failed(entryName))
    return 2;
  std::string error;
  FailureOr<run::Signature> sig =
      tools::describeEntry(*parsed, *entryName, kTool, error);
  if (failed(sig))
    return usageOrCompileError(error);
  if (!run::checkRanks(*sig, ranks, error))
    return usageOrCompileError(error);

  tools::CompileOptions overlapOptions;
  overlapOptions.profile = profile;
  overlapOptions.strategy = strategy;
  overlapOptions.testingDropWaits = testingDropWaits;
  tools::CompileOptions referenceOptions;
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

  run::Run overlapRun, referenceRun;
  overlapRun.sig = referenceRun.sig = &*sig;
  overlapRun.seed = referenceRun.seed = seed;
  auto packedCall = [](void (*entry)(void **)) {
    return [entry](std::vector<void *> &values) {
      std::vector<void *> packed;
      for (void *&value : values)
        packed.push_back(&value);
      entry(packed.data());
    };
  };
  overlapRun.call = packedCall(overlapProgram.entry);
  referenceRun.call = packedCall(referenceProgram.entry);
  double overlapMs = 0, referenceMs = 0;
  if (failed(launch(overlapRun, hostOptions, "overlap", overlapMs)) ||
      failed(launch(referenceRun, hostOptions, "reference", referenceMs)))
    return 2;

  // Every output of every rank: results first, then the arguments.
  std::vector<std::vector<run::OutputView>> got, want;
  if (!run::collectOutputs(overlapRun, got, error))
    return usageOrCompileError("overlap run, " + error);
  if (!run::collectOutputs(referenceRun, want, error))
    return usageOrCompileError("reference run, " + error);
  run::Tolerance tolerance{relTolerance, absTolerance};
  run::Comparison comparison =
      run::compareOutputs(*sig, got, want, tolerance, "overlap", "reference");
  run::freeResults(*sig, overlapRun);
  run::freeResults(*sig, referenceRun);

  llvm::outs() << comparison.text;
  llvm::outs() << "host run: overlap " << llvm::format("%.1f", overlapMs)
               << " ms, reference " << llvm::format("%.1f", referenceMs)
               << " ms (threads on this CPU; not a performance measure)\n";
  llvm::outs() << run::verdict(comparison);
  return comparison.ok ? 0 : 1;
}

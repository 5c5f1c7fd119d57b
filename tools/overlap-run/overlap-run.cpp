//===- overlap-run.cpp - Run on host ranks against a reference --*- C++ -*-===//
//
// Compiles the entry function twice in this process -- with overlap (the
// chosen strategy) and as a reference (strategy none: one matmul, then one
// collective) -- JITs both, runs each on the runtime's host backend with R
// ranks as threads and the same seeded random inputs per rank, and compares
// every rank's outputs (results, and memref arguments, which the entry
// writes) between the two: the JIT'd programs go through the loader's one
// Session (overlap/Loader/Session.h), as overlap-exec's libraries do, so
// inputs, poison, comparison, report and exit status are the same code.
// A tensor argument is an input only: where the
// two leave it differently (one reused its buffer), the report says which
// program wrote into it, and that is not a mismatch.
//
// Exit status: 0 when every output matches, 1 on a mismatch, 2 on a usage,
// compile or runtime error.
//
//===----------------------------------------------------------------------===//

#include "overlap/Compiler/Driver.h"
#include "overlap/Compiler/EntrySignature.h"
#include "overlap/Compiler/Input.h"
#include "overlap/Compiler/RemarkSetup.h"
#include "overlap/Loader/Run.h"
#include "overlap/Loader/Session.h"
#include "overlap/Runner/Jit.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

using namespace mlir;
namespace cl = llvm::cl;
namespace run = ::overlap::run;
namespace exec = ::overlap::exec;
namespace compiler = mlir::overlap::compiler;
namespace runner = mlir::overlap::runner;

namespace {
cl::OptionCategory category("overlap-run options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .mlir>"),
                               cl::Required, cl::cat(category));
cl::opt<std::string> entry("entry",
                           cl::desc("Function to run (default: the only "
                                    "public function with a body)"),
                           cl::init(""), cl::cat(category));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimization level (0-3)"),
                           cl::Prefix, cl::init(2), cl::cat(category));

/// The flags of RunOptions.def's RUN rows (LIBRARY rows name libraries
/// that overlap-run makes itself): each keeps its text, which
/// exec::setRunOption reads and checks as overlap-exec does.
struct RunFlags {
  std::vector<std::unique_ptr<cl::opt<std::string>>> values;
  std::unique_ptr<cl::opt<bool>> verbose;
  std::vector<std::string> help;

  RunFlags() {
    const std::vector<exec::RunOption> &rows = exec::runOptions();
    help.reserve(rows.size());
    for (const exec::RunOption &row : rows) {
      if (row.group != exec::RunGroup::Run)
        continue;
      help.push_back(exec::helpText(row));
      if (row.kind == exec::RunKind::Bool) {
        verbose = std::make_unique<cl::opt<bool>>(llvm::StringRef(row.flag),
                                                  cl::desc(help.back()),
                                                  cl::cat(category));
        continue;
      }
      values.push_back(std::make_unique<cl::opt<std::string>>(
          llvm::StringRef(row.flag), cl::desc(help.back()),
          cl::value_desc(row.meta), cl::cat(category)));
    }
  }

  /// Sets `o` from the flags given; "" or the first error.
  std::string apply(exec::SessionOptions &o) const {
    for (const auto &value : values)
      if (value->getNumOccurrences())
        if (std::string error = exec::setRunOption(
                o, *exec::findRunOption(value->ArgStr.str()), *value);
            !error.empty())
          return error;
    o.verbose = verbose && *verbose;
    return "";
  }
};
RunFlags &runFlags() {
  static RunFlags flags;
  return flags;
}
} // namespace

static constexpr const char *kTool = "overlap-run";

static int usageOrCompileError(const llvm::Twine &message) {
  llvm::errs() << kTool << ": error: " << message << "\n";
  return 2;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

namespace {
/// One compiled and JIT'd program, and the Session's view of it.
struct Program {
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<ExecutionEngine> engine;
  exec::Library library;
};
} // namespace

static LogicalResult compileAndJit(Program &program,
                                   const compiler::CompileOptions &opts,
                                   llvm::StringRef what,
                                   const std::string &entryName) {
  if (failed(compiler::runStages(
          *program.module, opts, "", kTool, llvm::errs(),
          [](PassManager &pm) { return applyPassManagerCLOptions(pm); }))) {
    llvm::errs() << kTool << ": error: compiling the " << what
                 << " program (strategy " << opts.strategy << ") failed\n";
    return failure();
  }
  auto engine = runner::createJit(*program.module, optLevel);
  if (!engine) {
    llvm::errs() << kTool << ": error: JIT compilation of the " << what
                 << " program failed: " << llvm::toString(engine.takeError())
                 << "\n";
    return failure();
  }
  program.engine = std::move(*engine);
  // Every allocation of the program starts poisoned (Run.h).
  runner::registerRuntimeSymbols(*program.engine,
                                 /*poisonAllocations=*/true);
  auto fn = program.engine->lookup("_mlir_ciface_" + entryName);
  if (!fn) {
    llvm::errs() << kTool << ": error: the " << what
                 << " program has no C interface _mlir_ciface_" << entryName
                 << ": " << llvm::toString(fn.takeError()) << "\n";
    return failure();
  }
  program.library.entry = *fn;
  program.library.path = inputFile + " (JIT)";
  return success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  compiler::registerRemarkCLOptions(category);
  // --profile, --strategy, --testing-drop-waits, ...: CompileOptions.def's
  // rows, as overlap-compile takes them (the reference keeps the profile and
  // is compiled with strategy none and its waits).
  compiler::registerCompileCLOptions(category);
  runFlags();
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "Overlap runner: runs a function on host ranks with overlap and as "
          "an unsplit reference, and compares the outputs\n",
          &llvm::errs()))
    return 2;

  // overlap-run's ranks are threads of this process (it JITs its programs):
  // the table's default.
  exec::SessionOptions session;
  if (std::string error = runFlags().apply(session); !error.empty())
    return usageOrCompileError(error);
  if (optLevel > 3)
    return usageOrCompileError("-O" + llvm::Twine(optLevel) +
                               ": the level is 0 to 3");

  // The overlap program is compiled in a context whose remarks the flags
  // turn on; the reference in its own, silent one.
  llvm::Expected<compiler::ParsedInput> input =
      compiler::parseInput(inputFile, compiler::remarkOptionsFromCL());
  std::unique_ptr<MLIRContext> referenceContext = compiler::createContext();
  if (!input)
    return usageOrCompileError(llvm::toString(input.takeError()));
  std::shared_ptr<llvm::SourceMgr> sourceMgr = input->source;
  SourceMgrDiagnosticHandler referenceHandler(*sourceMgr,
                                              referenceContext.get());
  OwningOpRef<ModuleOp> &parsed = input->module;
  llvm::Expected<std::string> entryName = compiler::selectEntry(*parsed, entry);
  if (!entryName)
    return usageOrCompileError(llvm::toString(entryName.takeError()));
  std::string error;
  if (failed(compiler::repairInput(*parsed)))
    return 2;
  compiler::boxEntryScalars(*parsed, *entryName);
  llvm::Expected<run::Signature> sig =
      compiler::describeEntry(*parsed, *entryName, kTool);
  if (!sig)
    return usageOrCompileError(llvm::toString(sig.takeError()));
  if (!session.ranks)
    session.ranks = run::defaultRanks(*sig);
  if (!run::checkRanks(*sig, session.ranks, error))
    return usageOrCompileError(error);

  compiler::CompileOptions overlapOptions = compiler::compileOptionsFromCL();
  if (overlapOptions.target != "host")
    return usageOrCompileError("--target " + overlapOptions.target +
                               ": overlap-run runs on host ranks (compile "
                               "for cuda with overlap-compile and run it "
                               "with overlap-exec)");
  if (llvm::Error err = overlapOptions.validate())
    return usageOrCompileError(llvm::toString(std::move(err)));
  compiler::CompileOptions referenceOptions = overlapOptions;
  referenceOptions.strategy = "none";
  referenceOptions.testingDropWaits = false;
  const std::string &strategy = overlapOptions.strategy;
  const std::string &profile = overlapOptions.profile;
  bool testingDropWaits = overlapOptions.testingDropWaits;

  Program overlapProgram, referenceProgram;
  referenceProgram.module =
      compiler::parseCheckedSource(sourceMgr, referenceContext.get());
  if (!referenceProgram.module)
    return 2;
  if (llvm::Expected<std::string> selected =
          compiler::selectEntry(*referenceProgram.module, *entryName);
      !selected)
    return usageOrCompileError(llvm::toString(selected.takeError()));
  compiler::boxEntryScalars(*referenceProgram.module, *entryName);
  overlapProgram.module = std::move(parsed);
  if (failed(
          compileAndJit(overlapProgram, overlapOptions, "overlap", *entryName)))
    return 2;
  if (failed(compileAndJit(referenceProgram, referenceOptions, "reference",
                           *entryName)))
    return 2;
  if (llvm::Error err = compiler::finishRemarks(*input->context))
    return usageOrCompileError(llvm::toString(std::move(err)));

  // Both programs run as overlap-exec runs libraries: one Session
  // (inputs, poison, ranks, comparison, report and exit status).
  overlapProgram.library.sig = *sig;
  overlapProgram.library.sig.strategy =
      strategy + (testingDropWaits ? " (waits dropped)" : "");
  overlapProgram.library.sig.profile = profile;
  referenceProgram.library.sig = *sig;
  referenceProgram.library.sig.strategy = "none";
  session.tool = kTool;
  session.programLibrary = &overlapProgram.library;
  session.referenceLibrary = &referenceProgram.library;
  session.programLabel = "overlap";
  exec::SessionOutput output;
  output.out = [](const std::string &text) {
    llvm::outs() << text;
    llvm::outs().flush();
  };
  output.err = [](const std::string &text) {
    llvm::outs().flush();
    llvm::errs() << text;
  };
  return exec::runSession(session, output);
}

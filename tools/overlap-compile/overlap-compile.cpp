//===- overlap-compile.cpp - Overlap compiler driver ------------*- C++ -*-===//
//
// Input .mlir (linalg + shard, or overlap fused ops, on tensors) to the
// LLVM dialect, LLVM IR, an object file or a shared library, through the
// whole pipeline in this process: tensor passes, bufferization, stream
// scheduling, lowering to the runtime, upstream lowering to LLVM, LLVM code
// generation. Only the final link of a shared library calls an external
// program (the system C compiler). Flag parsing over the driver library
// (overlap/Compiler/Driver.h).
//
//===----------------------------------------------------------------------===//

#include "overlap/Compiler/Driver.h"
#include "overlap/Compiler/RemarkSetup.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <optional>

using namespace mlir;
namespace cl = llvm::cl;
namespace compiler = mlir::overlap::compiler;

namespace {
using compiler::Emit;

cl::OptionCategory category("overlap-compile options");

cl::opt<std::string> inputFile(cl::Positional,
                               cl::desc("<input .mlir> (default: stdin)"),
                               cl::init("-"), cl::cat(category));
cl::opt<std::string>
    outputFile("o",
               cl::desc("Output file (default: stdout for mlir and llvm, "
                        "<input stem>.o / <input stem>.so for obj and so)"),
               cl::value_desc("file"), cl::init(""), cl::cat(category));
cl::opt<Emit>
    emit("emit", cl::desc("What to produce"), cl::init(Emit::MLIR),
         cl::values(clEnumValN(Emit::MLIR, "mlir",
                               "MLIR after the last stage (LLVM dialect)"),
                    clEnumValN(Emit::LLVM, "llvm", "LLVM IR text"),
                    clEnumValN(Emit::Object, "obj", "object file for the host"),
                    clEnumValN(Emit::SharedLibrary, "so",
                               "shared library linked against the runtime")),
         cl::cat(category));
cl::opt<std::string>
    entry("entry",
          cl::desc("Keep only this public function (others become private "
                   "and are dropped unless called)"),
          cl::init(""), cl::cat(category));
cl::opt<std::string> stopAfter(
    "stop-after-stage",
    cl::desc("With --emit=mlir: stop after this stage (tensor, bufferize, "
             "schedule, kernels [cuda], runtime, llvm)"),
    cl::init(""), cl::cat(category));
cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimization level (0-3)"),
                           cl::Prefix, cl::init(2), cl::cat(category));
cl::opt<std::string> mcpu("mcpu",
                          cl::desc("Target CPU for obj/so (default: generic; "
                                   "'native' for this machine's)"),
                          cl::init(""), cl::cat(category));
cl::opt<std::string> cc("cc",
                        cl::desc("C compiler that links --emit=so "
                                 "(default: cc)"),
                        cl::init("cc"), cl::cat(category));
cl::opt<bool> printPipeline("print-pipeline",
                            cl::desc("Print the pass pipeline and exit"),
                            cl::init(false), cl::cat(category));
} // namespace

static constexpr const char *kTool = "overlap-compile";

static int fail(const llvm::Twine &message) {
  llvm::errs() << kTool << ": error: " << message << "\n";
  return 1;
}

/// One line on stderr when the program has collectives and none was
/// split: without remarks the output alone would not say so.
static void reportNothingOverlapped(compiler::PlanCollector &collector) {
  std::vector<compiler::PlanRecord> plans = collector.take();
  std::vector<compiler::MissedRecord> missed = collector.takeMissed();
  size_t whole = 0;
  for (const compiler::PlanRecord &plan : plans) {
    const llvm::json::Array *tiles = plan.plan.getArray("tiles");
    if (tiles && tiles->size() > 1)
      return;
    ++whole;
  }
  llvm::StringSet<> unsplit;
  for (const compiler::MissedRecord &record : missed)
    unsplit.insert(record.location);
  if (whole == 0 && unsplit.empty())
    return; // no collective
  llvm::errs() << kTool << ": note: no op was overlapped (" << whole
               << " planned op(s) kept whole, " << unsplit.size()
               << " op(s) left unsplit; --remarks-filter=overlap says why)\n";
}

static std::string defaultOutput() {
  if (!outputFile.empty())
    return outputFile;
  if (emit == Emit::MLIR || emit == Emit::LLVM)
    return "-";
  llvm::StringRef stem = llvm::sys::path::stem(inputFile);
  if (stem.empty() || inputFile == "-")
    stem = "out";
  return (stem + (emit == Emit::Object ? ".o" : ".so")).str();
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  // --mlir-timing: one report of every stage's passes (LLVM's own
  // -time-passes reports its optimization and code generation).
  registerDefaultTimingManagerCLOptions();
  compiler::registerRemarkCLOptions(category);
  // --profile, --strategy, --target, ...: CompileOptions.def's rows.
  compiler::registerCompileCLOptions(category);
  cl::HideUnrelatedOptions(category);
  // A usage error exits 2, as in every tool (docs/tools.md).
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "Overlap compiler: tensor IR to the LLVM dialect, LLVM IR, an object "
          "file or a shared library that calls the Overlap runtime\n",
          &llvm::errs()))
    return 2;

  compiler::DriverOptions options;
  options.compile = compiler::compileOptionsFromCL();
  options.emit = emit;
  options.entry = entry;
  options.optLevel = optLevel;
  options.cpu = mcpu;
  options.cc = cc;

  if (printPipeline) {
    llvm::outs() << compiler::describePipeline(options.compile) << "\n";
    return 0;
  }
  // A bad option value (a misspelt strategy or profile, an unknown
  // target) is a usage error: exit 2, before the input is read.
  if (llvm::Error err = options.compile.validate()) {
    fail(llvm::toString(std::move(err)));
    return 2;
  }

  llvm::Expected<compiler::ParsedInput> input =
      compiler::parseInput(inputFile, compiler::remarkOptionsFromCL());
  if (!input)
    return fail(llvm::toString(input.takeError()));
  ModuleOp module = *input->module;
  // Without remark flags nothing would say that no op was overlapped: the
  // plans are collected to say it in one line.
  compiler::PlanCollector *plans =
      compiler::remarkOptionsFromCL().filter.empty()
          ? compiler::collectPlans(*input->context)
          : nullptr;

  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope stages = timing.getRootScope();
  llvm::Expected<compiler::Artifact> artifact = compiler::compileModule(
      module, defaultOutput(), options, stopAfter, [&](PassManager &pm) {
        if (timing.isEnabled())
          pm.enableTiming(stages);
        return applyPassManagerCLOptions(pm);
      });
  if (!artifact)
    return fail(llvm::toString(artifact.takeError()));
  for (const std::string &warning : artifact->warnings)
    llvm::errs() << kTool << ": warning: " << warning << "\n";
  if (plans)
    reportNothingOverlapped(*plans);
  if (llvm::Error err = compiler::finishRemarks(*input->context))
    return fail(llvm::toString(std::move(err)));
  return 0;
}

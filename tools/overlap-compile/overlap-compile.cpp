//===- overlap-compile.cpp - Overlap compiler driver ------------*- C++ -*-===//
//
// Input .mlir (linalg + shard, or overlap fused ops, on tensors) to the
// LLVM dialect, LLVM IR, an object file or a shared library, through the
// whole pipeline in this process: tensor passes, bufferization, stream
// scheduling, lowering to the runtime, upstream lowering to LLVM, LLVM code
// generation. Only the final link of a shared library calls an external
// program (the system C compiler).
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "EntrySignature.h"
#include "Registration.h"
#include "RunSupport.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
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
namespace run = ::overlap::run;
namespace tools = mlir::overlap::tools;

namespace {
enum class Emit { MLIR, LLVM, Obj, SO };
enum class Target { Host, Cuda };

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
                    clEnumValN(Emit::Obj, "obj", "object file for the host"),
                    clEnumValN(Emit::SO, "so",
                               "shared library linked against the runtime")),
         cl::cat(category));
cl::opt<Target>
    target("target", cl::desc("Runtime backend"), cl::init(Target::Host),
           cl::values(clEnumValN(Target::Host, "host",
                                 "host backend (ranks are threads)"),
                      clEnumValN(Target::Cuda, "cuda",
                                 "CUDA backend (cuBLASLt, NCCL)")),
           cl::cat(category));
cl::opt<std::string> gpuChip("gpu-chip",
                             cl::desc("--target=cuda: GPU the kernels are "
                                      "compiled for (default sm_90a)"),
                             cl::init("sm_90a"), cl::cat(category));
cl::opt<std::string>
    gpuFeatures("gpu-features",
                cl::desc("--target=cuda: PTX features (default +ptx80, "
                         "which CUDA 13's ptxas needs for sm_90a)"),
                cl::init("+ptx80"), cl::cat(category));
cl::opt<std::string>
    gpuFormat("gpu-format",
              cl::desc("--target=cuda: kernels embedded as fatbin (SASS + "
                       "PTX, needs ptxas), bin (cubin), or isa (PTX, "
                       "compiled by the driver at load)"),
              cl::init("fatbin"), cl::cat(category));
cl::opt<std::string> profile("profile",
                             cl::desc("Hardware profile: a JSON path or a "
                                      "name in profiles/"),
                             cl::init("h100-nvlink-datasheet"),
                             cl::cat(category));
cl::opt<std::string> strategy("strategy",
                              cl::desc("Tiling strategy: none, uniform:N, "
                                       "mc2, optimal, waves, ficco, auto"),
                              cl::init("auto"), cl::cat(category));
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
cl::opt<bool> testingDropWaits(
    "testing-drop-waits",
    cl::desc("Testing only: schedule streams without waits (wrong programs "
             "for chaos tests)"),
    cl::init(false), cl::cat(category));
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
cl::opt<bool> noRemarks("no-remarks",
                        cl::desc("Do not print the passes' remarks (plans)"),
                        cl::init(false), cl::cat(category));
} // namespace

static constexpr const char *kTool = "overlap-compile";

static int fail(const llvm::Twine &message) {
  llvm::errs() << kTool << ": error: " << message << "\n";
  return 1;
}

static std::string defaultOutput() {
  if (!outputFile.empty())
    return outputFile;
  if (emit == Emit::MLIR || emit == Emit::LLVM)
    return "-";
  llvm::StringRef stem = llvm::sys::path::stem(inputFile);
  if (stem.empty() || inputFile == "-")
    stem = "out";
  return (stem + (emit == Emit::Obj ? ".o" : ".so")).str();
}

/// Links `object` into the shared library `output` with the system C
/// compiler: the runtime of the target (liboverlap_runtime.so, or
/// liboverlap_runtime_cuda.so for --target=cuda, whose code calls
/// overlap_cuda_stream and the mgpu* functions) and, when the code copies
/// non-contiguous memrefs, MLIR's C runner utilities are found through an
/// rpath.
static int linkSharedLibrary(llvm::StringRef object, llvm::StringRef output,
                             bool needsRunnerUtils) {
  llvm::ErrorOr<std::string> program = llvm::sys::findProgramByName(cc);
  if (!program)
    return fail("stage 'link': cannot find the C compiler '" + cc +
                "' on PATH (needed for --emit=so)");
  std::string runtimeDir = tools::runtimeLibraryDir();
  std::string mlirDir = tools::mlirRunnerUtilsDir();
  std::string runtime =
      target == Target::Cuda ? "overlap_runtime_cuda" : "overlap_runtime";
  std::string runtimePath = runtimeDir + "/lib" + runtime + ".so";
  if (!llvm::sys::fs::exists(runtimePath))
    return fail("stage 'link': " + runtimePath + " does not exist" +
                (target == Target::Cuda
                     ? " (the CUDA backend is built only where CMake finds "
                       "CUDA, NCCL and cuBLASLt)"
                     : ""));
  std::vector<std::string> args = {*program,
                                   "-shared",
                                   "-o",
                                   output.str(),
                                   object.str(),
                                   "-L" + runtimeDir,
                                   "-Wl,-rpath," + runtimeDir,
                                   "-l" + runtime};
  if (needsRunnerUtils) {
    args.push_back("-L" + mlirDir);
    args.push_back("-Wl,-rpath," + mlirDir);
    args.push_back("-lmlir_c_runner_utils");
  }
  args.push_back("-lm");
  SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string errorMessage;
  int rc = llvm::sys::ExecuteAndWait(*program, argRefs, std::nullopt, {}, 0, 0,
                                     &errorMessage);
  if (rc != 0) {
    std::string command;
    for (const std::string &arg : args)
      command += arg + " ";
    return fail("stage 'link': '" + command + "' failed" +
                (errorMessage.empty() ? "" : ": " + errorMessage) +
                " (exit status " + llvm::Twine(rc) + ")");
  }
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Overlap compiler: tensor IR to the LLVM dialect, LLVM IR, an object "
      "file or a shared library that calls the Overlap runtime\n");

  tools::CompileOptions options;
  options.profile = profile;
  options.strategy = strategy;
  options.target = target == Target::Host ? "host" : "cuda";
  options.testingDropWaits = testingDropWaits;
  options.gpuChip = gpuChip;
  options.gpuFeatures = gpuFeatures;
  options.gpuFormat = gpuFormat;

  if (printPipeline) {
    llvm::outs() << tools::describePipeline(options) << "\n";
    return 0;
  }
  if (!stopAfter.empty() &&
      !llvm::any_of(tools::buildStages(options), [&](const tools::Stage &s) {
        return s.name == stopAfter;
      })) {
    std::string names;
    llvm::ListSeparator sep(", ");
    for (const tools::Stage &stage : tools::buildStages(options))
      names += (llvm::Twine(sep) + stage.name).str();
    return fail("--stop-after-stage: unknown stage '" + stopAfter + "' for --target=" +
                options.target + " (" + names + ")");
  }
  if (gpuFormat != "fatbin" && gpuFormat != "bin" && gpuFormat != "isa")
    return fail("--gpu-format: '" + gpuFormat +
                "' is not one of fatbin, bin, isa");
  if (!stopAfter.empty() && emit != Emit::MLIR)
    return fail("--stop-after-stage needs --emit=mlir");
  if (optLevel > 3)
    return fail("-O" + llvm::Twine(optLevel) + ": the level is 0 to 3");
  std::string cpu =
      mcpu == "native" ? llvm::sys::getHostCPUName().str() : std::string(mcpu);
  std::string cpuError;
  llvm::raw_string_ostream cpuErrorOs(cpuError);
  if (emit != Emit::MLIR && failed(tools::checkHostCPU(cpu, cpuErrorOs)))
    return fail("--mcpu " + mcpu + ": " + llvm::StringRef(cpuError).rtrim());

  std::unique_ptr<MLIRContext> contextOwner = tools::createToolContext();
  MLIRContext &context = *contextOwner;
  std::string errorMessage;
  std::shared_ptr<llvm::SourceMgr> sourceMgr =
      tools::loadSource(inputFile, errorMessage);
  if (!sourceMgr)
    return fail(errorMessage);
  SourceMgrDiagnosticHandler sourceMgrHandler(*sourceMgr, &context);
  // Remarks (the Planner's decisions) without the operation dump that the
  // context attaches to every diagnostic; errors keep it.
  ScopedDiagnosticHandler remarkHandler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Remark)
      return failure();
    if (!noRemarks)
      sourceMgrHandler.emitDiagnostic(diag.getLocation(), diag.str(),
                                      DiagnosticSeverity::Remark);
    return success();
  });

  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("stage 'parse': cannot parse " + inputFile);
  if (!entry.empty() &&
      failed(tools::selectEntry(*module, entry, kTool, llvm::errs())))
    return 1;

  // Objects and libraries carry their entry's signature, so that
  // overlap-exec runs them without MLIR. A module it cannot describe still
  // compiles (a C program may call it), with a warning.
  std::optional<run::Signature> signature;
  if (emit == Emit::Obj || emit == Emit::SO) {
    std::string why;
    FailureOr<std::string> entryName =
        entry.empty() ? tools::soleEntry(*module, why)
                      : FailureOr<std::string>(std::string(entry));
    FailureOr<run::Signature> sig = failure();
    if (succeeded(entryName))
      sig = tools::describeEntry(*module, *entryName, "overlap-exec", why);
    if (succeeded(sig)) {
      sig->target = options.target;
      sig->strategy = options.strategy;
      sig->profile = options.profile;
      signature = std::move(*sig);
    } else {
      llvm::errs() << kTool << ": warning: no " << run::kSignatureSymbol
                   << " embedded (overlap-exec cannot run the output): " << why
                   << "\n";
    }
  }

  if (failed(tools::runStages(
          *module, options, stopAfter, kTool, llvm::errs(),
          [](PassManager &pm) { return applyPassManagerCLOptions(pm); })))
    return 1;

  std::string output = defaultOutput();
  if (emit == Emit::MLIR) {
    auto file = openOutputFile(output, &errorMessage);
    if (!file)
      return fail(errorMessage);
    module->print(file->os());
    file->os() << "\n";
    file->keep();
    return 0;
  }

  std::string tmError;
  llvm::raw_string_ostream tmErrorOs(tmError);
  std::unique_ptr<llvm::TargetMachine> tm =
      tools::createHostTargetMachine(cpu, optLevel, tmErrorOs);
  if (!tm)
    return fail("stage 'codegen': " + tmError);
  llvm::LLVMContext llvmContext;
  std::string translateError;
  llvm::raw_string_ostream translateOs(translateError);
  std::unique_ptr<llvm::Module> llvmModule = tools::translateToLLVMIR(
      *module, llvmContext, *tm, optLevel, translateOs);
  if (!llvmModule)
    return fail("stage 'translate': " + translateError);

  if (emit == Emit::LLVM) {
    auto file = openOutputFile(output, &errorMessage);
    if (!file)
      return fail(errorMessage);
    llvmModule->print(file->os(), nullptr);
    file->keep();
    return 0;
  }

  if (signature)
    tools::embedSignature(*llvmModule, *signature);

  std::string codegenError;
  llvm::raw_string_ostream codegenOs(codegenError);
  if (emit == Emit::Obj) {
    auto file = openOutputFile(output, &errorMessage);
    if (!file)
      return fail(errorMessage);
    if (failed(tools::emitObject(*llvmModule, *tm, file->os(), codegenOs)))
      return fail("stage 'codegen': " + codegenError);
    file->keep();
    return 0;
  }

  // --emit=so: object into a temporary file, then the system linker.
  llvm::SmallString<128> objectPath;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "overlap-compile", "o", fd, objectPath))
    return fail("cannot create a temporary object file: " + ec.message());
  llvm::FileRemover removeObject(objectPath);
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    if (failed(tools::emitObject(*llvmModule, *tm, os, codegenOs)))
      return fail("stage 'codegen': " + codegenError);
  }
  bool needsRunnerUtils = llvmModule->getFunction("memrefCopy") != nullptr;
  return linkSharedLibrary(objectPath, output, needsRunnerUtils);
}

//===- Emit.cpp - LLVM IR, objects and shared libraries ---------*- C++ -*-===//
//
// The way out of MLIR: the host target machine (and the check of --mcpu),
// LLVM IR and its optimization, object code, and the link of a shared
// library against the runtime found beside this library. (The JIT is
// lib/Runner's.)
//
//===----------------------------------------------------------------------===//

#include "overlap/Compiler/Driver.h"
#include "overlap/Compiler/EntrySignature.h"
#include "overlap/Compiler/RemarkSetup.h"
#include "overlap/InitAllDialects.h"
#include "overlap/InitAllPasses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <dlfcn.h>
#include <mutex>
#include <optional>

using namespace mlir;
using namespace mlir::overlap::compiler;
namespace artifact = ::overlap::artifact;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The symbols of the linker's "undefined reference to `sym'" lines, each
/// once, quoted and comma-separated; empty when there are none.
static std::string undefinedSymbols(llvm::StringRef linkerOutput) {
  std::vector<std::string> seen;
  llvm::StringRef rest = linkerOutput;
  const llvm::StringRef marker = "undefined reference to `";
  while (true) {
    size_t at = rest.find(marker);
    if (at == llvm::StringRef::npos)
      break;
    rest = rest.drop_front(at + marker.size());
    std::string sym = rest.take_until([](char c) { return c == '\''; }).str();
    if (std::find(seen.begin(), seen.end(), sym) == seen.end())
      seen.push_back(sym);
  }
  std::string out;
  for (const std::string &sym : seen)
    out += (out.empty() ? "'" : ", '") + sym + "'";
  return out;
}

llvm::Error mlir::overlap::compiler::linkSharedLibrary(llvm::StringRef object,
                                                       llvm::StringRef output,
                                                       llvm::StringRef target,
                                                       bool needsRunnerUtils,
                                                       llvm::StringRef cc) {
  llvm::ErrorOr<std::string> program = llvm::sys::findProgramByName(cc);
  if (!program)
    return error("stage 'link': cannot find the C compiler '" + cc +
                 "' on PATH (needed for shared libraries)");
  std::string runtimeDir = runtimeLibraryDir();
  std::string mlirDir = mlirRunnerUtilsDir();
  std::string runtime =
      target == "cuda" ? "overlap_runtime_cuda" : "overlap_runtime";
  std::string runtimePath = runtimeDir + "/lib" + runtime + ".so";
  if (!llvm::sys::fs::exists(runtimePath))
    return error("stage 'link': " + runtimePath + " does not exist" +
                 (target == "cuda"
                      ? " (the CUDA backend is built only where CMake finds "
                        "CUDA, NCCL and cuBLASLt)"
                      : ""));
  // $ORIGIN first: a program shipped next to a runtime uses that one; else
  // the runtime beside this compiler library (an installation's lib/).
  std::vector<std::string> args = {*program,
                                   "-shared",
                                   "-o",
                                   output.str(),
                                   object.str(),
                                   "-L" + runtimeDir,
                                   "-Wl,-rpath,$ORIGIN:" + runtimeDir,
                                   "-l" + runtime};
  if (needsRunnerUtils) {
    args.push_back("-L" + mlirDir);
    args.push_back("-Wl,-rpath," + mlirDir);
    args.push_back("-lmlir_c_runner_utils");
  }
  args.push_back("-lm");
  // Every symbol the program imports must come from what it links (libc,
  // libm, the runtime, the runner utilities): a symbol left undefined would
  // make a library that links but cannot be loaded (a compiler-rt builtin
  // such as __truncsfbf2 that Debian's libgcc lacks did).
  args.push_back("-Wl,--no-undefined");
  SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  // The linker's diagnostics, to name what is missing.
  llvm::SmallString<128> diagnostics;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "overlap-link", "txt", diagnostics))
    return error("stage 'link': cannot make a temporary file: " + ec.message());
  llvm::scope_exit removeDiagnostics(
      [&] { llvm::sys::fs::remove(diagnostics); });
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, std::nullopt,
                                                llvm::StringRef(diagnostics)};
  std::string errorMessage;
  int rc = llvm::sys::ExecuteAndWait(*program, argRefs, std::nullopt, redirects,
                                     0, 0, &errorMessage);
  if (rc != 0) {
    std::string text;
    if (auto buffer = llvm::MemoryBuffer::getFile(diagnostics))
      text = (*buffer)->getBuffer().str();
    if (std::string missing = undefinedSymbols(text); !missing.empty())
      return error("stage 'link': the program needs " + missing +
                   ", which nothing it links provides (libc, libm, " +
                   runtimePath +
                   "): a library with it would not load. It comes from an "
                   "op the host cannot do natively or a function the "
                   "program declares but no library defines");
    std::string command;
    for (const std::string &arg : args)
      command += arg + " ";
    return error("stage 'link': '" + command + "' failed" +
                 (errorMessage.empty() ? "" : ": " + errorMessage) +
                 " (exit status " + llvm::Twine(rc) + ")" +
                 (llvm::StringRef(text).trim().empty()
                      ? ""
                      : ":\n" + llvm::StringRef(text).trim().str()));
  }
  return llvm::Error::success();
}

llvm::Error mlir::overlap::compiler::checkHostCPU(llvm::StringRef cpu) {
  if (cpu.empty() || cpu == "native" || cpu == "generic")
    return llvm::Error::success();
  initializeNativeTarget();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string why;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, why);
  if (!target)
    return error("no LLVM target for " + triple.str() + ": " + why);
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!info || info->isCPUStringValid(cpu))
    return llvm::Error::success();
  llvm::StringRef closest;
  unsigned distance = ~0u;
  for (const llvm::SubtargetSubTypeKV &known :
       info->getAllProcessorDescriptions()) {
    unsigned d = cpu.edit_distance(known.Key);
    if (d < distance) {
      distance = d;
      closest = known.Key;
    }
  }
  return error("--mcpu: '" + cpu + "' is not a CPU of " + triple.str() +
               (closest.empty() ? llvm::Twine("")
                                : " (the closest is '" + closest + "'") +
               (closest.empty() ? " (" : "; ") +
               "'generic' and 'native' also work)");
}

namespace mlir {
namespace overlap {
namespace compiler {

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

static llvm::CodeGenOptLevel codeGenLevel(unsigned optLevel) {
  switch (optLevel) {
  case 0:
    return llvm::CodeGenOptLevel::None;
  case 1:
    return llvm::CodeGenOptLevel::Less;
  case 2:
    return llvm::CodeGenOptLevel::Default;
  default:
    return llvm::CodeGenOptLevel::Aggressive;
  }
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createHostTargetMachine(llvm::StringRef cpu, unsigned optLevel) {
  initializeNativeTarget();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no LLVM target for " + triple.str() + ": " +
                                   error);
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu.empty() ? llvm::StringRef("generic") : cpu, "", targetOptions,
      llvm::Reloc::PIC_, std::nullopt, codeGenLevel(optLevel)));
  if (!tm)
    return llvm::createStringError("cannot create a target machine for " +
                                   triple.str());
  return std::move(tm);
}

/// Host glue (every function but the loop kernels of
/// overlap-outline-loops): runtime calls in program order, whose time is
/// the calls'. It is kept out of LLVM's optimizations and compiled by the
/// fast instruction selector (optnone), whose cost is linear in its size;
/// the loop kernels, small and shared, get the whole -O level.
///
/// Calls between the program's functions bind inside the library: the
/// loop kernels are internal, and every other defined function is
/// protected (still exported, never interposed). An entry named like a
/// C library function (JAX names it after the Python function: `cos`,
/// `exp`) would otherwise be called through the PLT and reach libm's.
static void markHostGlue(llvm::Module &module, bool optimizeKernelsOnly) {
  for (llvm::Function &f : module) {
    if (f.isDeclaration())
      continue;
    if (f.getName().starts_with("__overlap_loops_")) {
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
      continue;
    }
    if (f.hasDefaultVisibility() && !f.hasLocalLinkage()) {
      f.setVisibility(llvm::GlobalValue::ProtectedVisibility);
      f.setDSOLocal(true);
    }
    if (!optimizeKernelsOnly)
      continue;
    f.addFnAttr(llvm::Attribute::OptimizeNone);
    f.addFnAttr(llvm::Attribute::NoInline);
    f.removeFnAttr(llvm::Attribute::AlwaysInline);
  }
}

llvm::Error optimizeHostModule(llvm::Module &module, unsigned optLevel,
                               llvm::TargetMachine *tm) {
  markHostGlue(module, optLevel > 0);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // -time-passes (LLVM's option) reports these passes' times.
  llvm::PassInstrumentationCallbacks callbacks;
  llvm::StandardInstrumentations instrumentations(module.getContext(),
                                                  /*DebugLogging=*/false);
  instrumentations.registerCallbacks(callbacks, &mam);
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(tm, tuning, std::nullopt, &callbacks);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = optLevel == 0   ? llvm::OptimizationLevel::O0
                                  : optLevel == 1 ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager passes =
      optLevel == 0 ? builder.buildO0DefaultPipeline(level)
                    : builder.buildPerModuleDefaultPipeline(level);
  passes.run(module, mam);
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<llvm::Module>>
translateToLLVMIR(ModuleOp module, llvm::LLVMContext &context,
                  llvm::TargetMachine &tm, unsigned optLevel) {
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return llvm::createStringError(
        "the translation of the LLVM dialect to LLVM IR failed");
  ExecutionEngine::setupTargetTripleAndDataLayout(llvmModule.get(), &tm);
  if (llvm::Error err = optimizeHostModule(*llvmModule, optLevel, &tm))
    return llvm::createStringError("LLVM optimization failed: " +
                                   llvm::toString(std::move(err)));
  return std::move(llvmModule);
}

llvm::Error emitObject(llvm::Module &module, llvm::TargetMachine &tm,
                       llvm::raw_pwrite_stream &os) {
  // A module of host glue only (every defined function optnone: target=cuda,
  // whose loops are GPU kernels by now) is code-generated at -O0: optnone
  // keeps the fast instruction selector, but the register allocator is the
  // target machine's, and the greedy one grows faster than the function
  // (one entry with every layer inlined, at target=cuda).
  bool glueOnly = llvm::all_of(module, [](const llvm::Function &f) {
    return f.isDeclaration() || f.hasFnAttribute(llvm::Attribute::OptimizeNone);
  });
  llvm::CodeGenOptLevel level = tm.getOptLevel();
  if (glueOnly)
    tm.setOptLevel(llvm::CodeGenOptLevel::None);
  llvm::legacy::PassManager pm;
  bool cannot = tm.addPassesToEmitFile(pm, os, nullptr,
                                       llvm::CodeGenFileType::ObjectFile);
  if (!cannot)
    pm.run(module);
  tm.setOptLevel(level);
  if (cannot)
    return llvm::createStringError(
        "the target machine cannot emit object files");
  return llvm::Error::success();
}

/// The directory of the shared object (or executable) that holds `symbol`,
/// with links resolved; empty when unknown.
static std::string directoryOf(const void *symbol) {
  Dl_info info;
  if (!dladdr(symbol, &info) || !info.dli_fname)
    return "";
  llvm::SmallString<256> real;
  if (llvm::sys::fs::real_path(info.dli_fname, real))
    return "";
  return llvm::sys::path::parent_path(real).str();
}

std::string runtimeLibraryDir() {
  // The runtimes sit beside libOverlapCompiler.so, in the build tree's lib/
  // and in an installation's alike; the compiler links none of them.
  return directoryOf(reinterpret_cast<const void *>(&runtimeLibraryDir));
}

std::string mlirRunnerUtilsDir() { return OVERLAP_MLIR_LIB_DIR; }

} // namespace compiler
} // namespace overlap
} // namespace mlir

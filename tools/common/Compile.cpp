//===- Compile.cpp - The Overlap compile pipeline, in process ---*- C++ -*-===//
//
// Stages and their textual pipelines, entry selection, and the way out of
// MLIR (LLVM IR, optimization, object code) shared by the Overlap tools.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"
#include "Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include "overlap/Runtime/overlap_runtime.h"

#include <dlfcn.h>
#include <mutex>

using namespace mlir;

namespace mlir {
namespace overlap {
namespace tools {

/// Pass option values are quoted so that a profile path with spaces or
/// pipeline punctuation survives parsing.
static std::string quote(llvm::StringRef value) {
  return ("\"" + value + "\"").str();
}

std::vector<Stage> buildStages(const CompileOptions &options) {
  std::vector<Stage> stages;
  bool cuda = options.target == "cuda";
  // With target=cuda only the entry gets device memory and the context's
  // streams, so calls are inlined first.
  stages.push_back({"tensor",
                    "raise, reorder chains, plan and decompose on tensors",
                    std::string(cuda ? "inline, " : "") +
                        "overlap-pipeline{profile=" + quote(options.profile) +
                        " strategy=" + quote(options.strategy) + "}"});
  // Ownership-based deallocation runs before stream scheduling so that its
  // deallocations (after the last use of each buffer) are not tile work:
  // they end a concurrent region, whose end synchronizes the streams, so no
  // buffer is freed while a stream may still use it. The canonicalization
  // before buffer-deallocation-simplification is not optional: without it
  // the simplification crashes in BufferOriginAnalysis (MLIR 22) on a
  // single-tile all-gather.
  stages.push_back({"bufferize",
                    "one-shot bufferization and buffer deallocation",
                    "one-shot-bufferize{bufferize-function-boundaries "
                    "function-boundary-type-conversion=identity-layout-map}, "
                    "ownership-based-buffer-deallocation, canonicalize, "
                    "buffer-deallocation-simplification, "
                    "bufferization-lower-deallocations, cse, canonicalize"});
  stages.push_back(
      {"schedule", "compute and comm streams with signal/wait",
       std::string("overlap-schedule-streams{testing-drop-waits=") +
           (options.testingDropWaits ? "true" : "false") + "}"});
  // With target=cuda the buffers are device memory: the linalg ops the
  // runtime has no call for become kernels, in place (so on their stream),
  // before the runtime lowering launches them. Clones (of a returned
  // argument) become alloc + copy first, so that the runtime lowering
  // turns them into overlap_alloc + overlap_memcpy.
  if (cuda)
    stages.push_back(
        {"kernels", "GPU kernels for the linalg ops without a runtime call",
         "convert-bufferization-to-memref, "
         "func.func(overlap-linalg-to-gpu), "
         "func.func(gpu-launch-sink-index-computations), gpu-kernel-outlining, "
         "nvvm-attach-target{chip=" +
             quote(options.gpuChip) + " features=" +
             quote(options.gpuFeatures) + " O=3}"});
  stages.push_back(
      {"runtime", "lowering to calls of the Overlap runtime",
       "convert-overlap-to-runtime{target=" + quote(options.target) + "}"});
  std::string host =
      "expand-strided-metadata, lower-affine, "
      "convert-scf-to-cf, finalize-memref-to-llvm, convert-math-to-llvm, "
      "convert-arith-to-llvm, convert-index-to-llvm, ";
  if (!cuda)
    stages.push_back(
        {"llvm", "lowering of the remaining upstream dialects to LLVM",
         "convert-bufferization-to-memref, convert-linalg-to-loops, " + host +
             "convert-func-to-llvm, convert-cf-to-llvm, "
             "reconcile-unrealized-casts"});
  else
    // The kernels first (NVVM, then a binary for the chip), then the host
    // code; gpu-to-llvm turns the launches into mgpu* calls on the streams
    // convert-overlap-to-runtime gave them.
    stages.push_back(
        {"llvm", "kernels to NVVM and a GPU binary, host code to LLVM",
         "convert-bufferization-to-memref, "
         "gpu.module(expand-strided-metadata, lower-affine, "
         "convert-scf-to-cf, convert-gpu-to-nvvm, canonicalize, cse, "
         "reconcile-unrealized-casts), "
         "gpu-module-to-binary{format=" +
             quote(options.gpuFormat) + "}, " + host +
             "gpu-to-llvm, convert-func-to-llvm, convert-cf-to-llvm, "
             "reconcile-unrealized-casts"});
  return stages;
}

std::string describePipeline(const CompileOptions &options) {
  std::string text = "builtin.module(";
  llvm::ListSeparator sep(", ");
  for (const Stage &stage : buildStages(options))
    text += llvm::StringRef(sep).str() + stage.pipeline;
  return text + ")";
}

LogicalResult runStages(ModuleOp module, const CompileOptions &options,
                        llvm::StringRef stopAfter, llvm::StringRef tool,
                        llvm::raw_ostream &errs,
                        function_ref<LogicalResult(PassManager &)> configure) {
  for (const Stage &stage : buildStages(options)) {
    auto fail = [&]() {
      errs << tool << ": error: stage '" << stage.name << "' ("
           << stage.description << ") failed\n";
      return failure();
    };
    PassManager pm(module.getContext(), ModuleOp::getOperationName());
    std::string parseErrors;
    llvm::raw_string_ostream parseOs(parseErrors);
    if (failed(parsePassPipeline(stage.pipeline, pm, parseOs))) {
      errs << tool << ": error: stage '" << stage.name
           << "': cannot build the pipeline '" << stage.pipeline
           << "': " << parseErrors << "\n";
      return failure();
    }
    if (configure && failed(configure(pm)))
      return failure();
    if (failed(pm.run(module)))
      return fail();
    if (stage.name == stopAfter)
      break;
  }
  return success();
}

FailureOr<std::string> selectEntry(ModuleOp module, llvm::StringRef entry,
                                   llvm::StringRef tool,
                                   llvm::raw_ostream &errs) {
  SmallVector<func::FuncOp> candidates;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal())
      candidates.push_back(func);
  auto listCandidates = [&]() {
    llvm::ListSeparator sep(", ");
    for (func::FuncOp func : candidates)
      errs << sep << "@" << func.getSymName();
    if (candidates.empty())
      errs << "none";
  };
  func::FuncOp chosen;
  if (entry.empty()) {
    if (candidates.size() != 1) {
      errs << tool << ": error: the module has " << candidates.size()
           << " public functions with a body (";
      listCandidates();
      errs << "); choose one with --entry\n";
      return failure();
    }
    chosen = candidates.front();
  } else {
    auto it = llvm::find_if(candidates, [&](func::FuncOp func) {
      return func.getSymName() == entry;
    });
    if (it == candidates.end()) {
      errs << tool << ": error: no public function @" << entry
           << " with a body; public functions: ";
      listCandidates();
      errs << "\n";
      return failure();
    }
    chosen = *it;
  }
  for (func::FuncOp func : candidates)
    if (func != chosen)
      func.setPrivate();
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  pm.addPass(createSymbolDCEPass());
  if (failed(pm.run(module))) {
    errs << tool << ": error: dropping the functions other than @"
         << chosen.getSymName() << " failed\n";
    return failure();
  }
  return chosen.getSymName().str();
}

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

/// The host's LLVM target, or null with the reason on `errs`.
static const llvm::Target *hostTarget(const llvm::Triple &triple,
                                      llvm::raw_ostream &errs) {
  initializeNativeTarget();
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    errs << "no LLVM target for " << triple.str() << ": " << error << "\n";
  return target;
}

LogicalResult checkHostCPU(llvm::StringRef cpu, llvm::raw_ostream &errs) {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  const llvm::Target *target = hostTarget(triple, errs);
  if (!target)
    return failure();
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, "", ""));
  if (cpu.empty() || !info || info->isCPUStringValid(cpu))
    return success();
  errs << "'" << cpu << "' is not a CPU of " << triple.str();
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
  if (!closest.empty())
    errs << " (the closest is '" << closest << "'; 'generic' and 'native' "
         << "also work)";
  errs << "\n";
  return failure();
}

std::unique_ptr<llvm::TargetMachine>
createHostTargetMachine(llvm::StringRef cpu, unsigned optLevel,
                        llvm::raw_ostream &errs) {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  const llvm::Target *target = hostTarget(triple, errs);
  if (!target || failed(checkHostCPU(cpu, errs)))
    return nullptr;
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu.empty() ? llvm::StringRef("generic") : cpu, "", targetOptions,
      llvm::Reloc::PIC_, std::nullopt, codeGenLevel(optLevel)));
  if (!tm)
    errs << "cannot create a target machine for " << triple.str() << "\n";
  return tm;
}

std::unique_ptr<llvm::Module> translateToLLVMIR(ModuleOp module,
                                                llvm::LLVMContext &context,
                                                llvm::TargetMachine &tm,
                                                unsigned optLevel,
                                                llvm::raw_ostream &errs) {
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context);
  if (!llvmModule) {
    errs << "the translation of the LLVM dialect to LLVM IR failed\n";
    return nullptr;
  }
  ExecutionEngine::setupTargetTripleAndDataLayout(llvmModule.get(), &tm);
  auto optimize = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, &tm);
  if (llvm::Error err = optimize(llvmModule.get())) {
    errs << "LLVM optimization failed: " << llvm::toString(std::move(err))
         << "\n";
    return nullptr;
  }
  return llvmModule;
}

LogicalResult emitObject(llvm::Module &module, llvm::TargetMachine &tm,
                         llvm::raw_pwrite_stream &os, llvm::raw_ostream &errs) {
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr,
                             llvm::CodeGenFileType::ObjectFile)) {
    errs << "the target machine cannot emit object files\n";
    return failure();
  }
  pm.run(module);
  return success();
}

std::string runtimeLibraryDir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&overlap_host_launch), &info) &&
      info.dli_fname) {
    llvm::SmallString<256> real;
    if (!llvm::sys::fs::real_path(info.dli_fname, real))
      return llvm::sys::path::parent_path(real).str();
  }
  return OVERLAP_RUNTIME_LIB_DIR;
}

std::string mlirRunnerUtilsDir() { return OVERLAP_MLIR_LIB_DIR; }

} // namespace tools
} // namespace overlap
} // namespace mlir

std::unique_ptr<MLIRContext> mlir::overlap::tools::createToolContext() {
  DialectRegistry registry;
  registerDialects(registry);
  registerPasses();
  auto context = std::make_unique<MLIRContext>(registry);
  auto *printOp =
      llvm::cl::getRegisteredOptions().lookup("mlir-print-op-on-diagnostic");
  if (!printOp || !printOp->getNumOccurrences())
    context->printOpOnDiagnostic(false);
  return context;
}

std::shared_ptr<llvm::SourceMgr>
mlir::overlap::tools::loadSource(StringRef path, std::string &error) {
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(path, &error);
  if (!input)
    return nullptr;
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  return sourceMgr;
}

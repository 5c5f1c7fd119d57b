//===- Driver.cpp - The Overlap compiler driver, in process -----*- C++ -*-===//
//
// Context, input, entry selection, and the way out of MLIR (LLVM IR,
// optimization, object code, shared libraries).
//
//===----------------------------------------------------------------------===//

#include "overlap/Compiler/Driver.h"
#include "overlap/InitAllDialects.h"
#include "overlap/InitAllPasses.h"

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


#include <dlfcn.h>
#include <mutex>

using namespace mlir;

namespace mlir {
namespace overlap {
namespace compiler {

FailureOr<std::string> selectEntry(ModuleOp module, llvm::StringRef entry,
                                   llvm::StringRef tool,
                                   llvm::raw_ostream &errs) {
  std::string prefix = tool.empty() ? "" : (tool + ": error: ").str();
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
      errs << prefix << "the module has " << candidates.size()
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
      errs << prefix << "no public function @" << entry
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
    errs << prefix << "dropping the functions other than @"
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

std::unique_ptr<llvm::TargetMachine>
createHostTargetMachine(llvm::StringRef cpu, unsigned optLevel,
                        llvm::raw_ostream &errs) {
  initializeNativeTarget();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    errs << "no LLVM target for " << triple.str() << ": " << error << "\n";
    return nullptr;
  }
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

std::unique_ptr<MLIRContext> mlir::overlap::compiler::createContext() {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllPasses();
  auto context = std::make_unique<MLIRContext>(registry);
  auto *printOp =
      llvm::cl::getRegisteredOptions().lookup("mlir-print-op-on-diagnostic");
  if (!printOp || !printOp->getNumOccurrences())
    context->printOpOnDiagnostic(false);
  return context;
}

std::shared_ptr<llvm::SourceMgr>
mlir::overlap::compiler::loadSource(StringRef path, std::string &error) {
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(path, &error);
  if (!input)
    return nullptr;
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  return sourceMgr;
}

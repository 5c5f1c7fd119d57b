//===- Jit.cpp - Run compiled modules in this process -----------*- C++ -*-===//
//
// The JIT of overlap-run: an ExecutionEngine of an LLVM-dialect module with
// the runtime's C ABI (RuntimeABI.def) and the loader's poisoning
// allocators registered by name. It links the host runtime; the compiler
// library does not (a compiler links no runtime).
//
//===----------------------------------------------------------------------===//

#include "overlap/Runner/Jit.h"
#include "overlap/Compiler/Driver.h"
#include "overlap/Loader/Run.h"
#include "overlap/Runtime/overlap_runtime.h"
#include "overlap/Runtime/overlap_runtime_process.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/FileSystem.h"

#include <string_view>

using namespace mlir;
namespace run = ::overlap::run;

/// The runtime's C ABI (and, for runs that check them, the poisoning
/// allocators of Run.h: every allocation starts as all-ones bytes, a
/// NaN in f32, f16 and bf16), by name, for the JIT. Registered explicitly
/// (rather than found among the process's symbols) so that resolution does
/// not depend on how the host program was linked.
static llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner mangle,
                                           bool poisonAllocations) {
  llvm::orc::SymbolMap map;
  auto add = [&](llvm::StringRef name, auto *fn) {
    map[mangle(name)] = {
        llvm::orc::ExecutorAddr::fromPtr(reinterpret_cast<void *>(fn)),
        llvm::JITSymbolFlags::Exported};
  };
  // Every CORE and PROCESS row of RuntimeABI.def (the host runtime this
  // library links has no CUDA row); overlap_alloc is the poisoning one when
  // asked.
#define OVERLAP_JIT_ROW_CORE(NAME)                                             \
  if (!(poisonAllocations && std::string_view(#NAME) == "overlap_alloc"))      \
    add(#NAME, &::NAME);
#define OVERLAP_JIT_ROW_PROCESS(NAME) add(#NAME, &::NAME);
#define OVERLAP_JIT_ROW_CUDA(NAME)
#define OVERLAP_RUNTIME_FUNCTION(GROUP, NAME, RESULT, ...)                     \
  OVERLAP_JIT_ROW_##GROUP(NAME)
#include "overlap/Runtime/RuntimeABI.def"
#undef OVERLAP_JIT_ROW_CORE
#undef OVERLAP_JIT_ROW_PROCESS
#undef OVERLAP_JIT_ROW_CUDA
  if (poisonAllocations) {
    add("overlap_alloc", &run::poisonedOverlapAlloc);
    add("malloc", &run::poisonedMalloc);
    add("aligned_alloc", &run::poisonedAlignedAlloc);
    add("free", &run::trackedFree);
  }
  return map;
}

void mlir::overlap::runner::registerRuntimeSymbols(ExecutionEngine &engine,
                                                   bool poisonAllocations) {
  engine.registerSymbols([&](llvm::orc::MangleAndInterner mangle) {
    return runtimeSymbols(mangle, poisonAllocations);
  });
}

llvm::Expected<std::unique_ptr<ExecutionEngine>>
mlir::overlap::runner::createJit(ModuleOp module, unsigned optLevel) {
  compiler::initializeNativeTarget();
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = [optLevel](llvm::Module *module) {
    return compiler::optimizeHostModule(*module, optLevel, nullptr);
  };
  engineOptions.jitCodeGenOptLevel = optLevel == 0
                                         ? llvm::CodeGenOptLevel::None
                                         : llvm::CodeGenOptLevel::Default;
  // memrefCopy, which finalize-memref-to-llvm calls for copies between
  // non-contiguous memrefs.
  std::string runnerUtils =
      compiler::mlirRunnerUtilsDir() + "/libmlir_c_runner_utils.so";
  SmallVector<llvm::StringRef> libs;
  if (llvm::sys::fs::exists(runnerUtils))
    libs.push_back(runnerUtils);
  engineOptions.sharedLibPaths = libs;
  return ExecutionEngine::create(module, engineOptions);
}

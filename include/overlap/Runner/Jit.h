//===- Jit.h - Run compiled modules in this process -------------*- C++ -*-===//
//
// The JIT that overlap-run uses (Overlap::Runner): kept out of
// libOverlapCompiler.so, which links no runtime, so that only a tool (or
// an embedder) that wants to run programs in its own process links one.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_RUNNER_JIT_H
#define OVERLAP_RUNNER_JIT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace mlir {
class ExecutionEngine;

namespace overlap {
namespace runner {

/// A JIT of `module` (LLVM dialect) at `optLevel`, with MLIR's C runner
/// utilities loaded when they are installed.
llvm::Expected<std::unique_ptr<ExecutionEngine>> createJit(ModuleOp module,
                                                           unsigned optLevel);

/// Makes the runtime's C ABI (every CORE and PROCESS row of RuntimeABI.def,
/// from the host runtime this library links) known to `engine` by name;
/// with `poisonAllocations`, overlap_alloc, malloc and aligned_alloc are
/// the loader's poisoning versions (Run.h).
void registerRuntimeSymbols(ExecutionEngine &engine, bool poisonAllocations);

} // namespace runner
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_RUNNER_JIT_H

//===- Registration.h - Dialects and passes of the tools --------*- C++ -*-===//
//
// What overlap-compile and overlap-run (and any other driver) register: our
// dialect, the upstream dialects that programs around it use, their
// external interface models (bufferization, deallocation, sharding, tiling,
// value bounds, to-LLVM), the LLVM IR translations, and the passes that the
// compile pipeline names.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_TOOLS_COMMON_REGISTRATION_H
#define OVERLAP_TOOLS_COMMON_REGISTRATION_H

namespace mlir {
class DialectRegistry;

namespace overlap {
namespace tools {

/// Inserts the dialects and their interface models into `registry`,
/// including the LLVM IR translation of the builtin and LLVM dialects.
void registerDialects(mlir::DialectRegistry &registry);

/// The interface models (to-LLVM, inliner, bufferization, deallocation,
/// sharding, tiling, value bounds) of the upstream dialects Overlap uses,
/// and Overlap's own bufferization models. upstream's registerAllDialects
/// would add them for every dialect; tools register only these.
void registerInterfaceModels(mlir::DialectRegistry &registry);

/// Registers (once per process) every pass that `buildStages` may name, so
/// that `mlir::parsePassPipeline` finds it.
void registerPasses();

} // namespace tools
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_TOOLS_COMMON_REGISTRATION_H

//===- InitAllDialects.h - Every dialect an Overlap pipeline needs -*- C++ -*-===//
//
// One registration for every tool, plugin and embedder: the Overlap dialect,
// the upstream dialects its input and pipelines use (shard, linalg, tensor,
// bufferization, memref, scf, gpu, nvvm, llvm, ...), their external
// interface models (bufferization, deallocation, sharding, tiling, value
// bounds, to-LLVM, inlining), Overlap's own bufferization models, and the
// translations to LLVM IR. (As upstream's mlir/InitAllDialects.h and
// CIRCT's circt/InitAllDialects.h, limited to what Overlap uses.)
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_INITALLDIALECTS_H
#define OVERLAP_INITALLDIALECTS_H

namespace mlir {
class DialectRegistry;

namespace overlap {

/// Inserts the dialects, their interface models and the LLVM IR
/// translations into `registry`.
void registerAllDialects(DialectRegistry &registry);

/// Only the interface models of the upstream dialects Overlap uses, and
/// Overlap's bufferization models (for a registry that already has the
/// dialects, e.g. a stock mlir-opt's through the dialect plugin).
void registerInterfaceModels(DialectRegistry &registry);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_INITALLDIALECTS_H

//===- InitAllPasses.h - Every pass an Overlap pipeline names ---*- C++ -*-===//
//
// One registration for every tool, plugin and embedder: Overlap's passes,
// its pipelines (`overlap-pipeline`, `overlap-to-llvm`), and the upstream
// passes those pipelines name, so that mlir::parsePassPipeline finds them.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_INITALLPASSES_H
#define OVERLAP_INITALLPASSES_H

namespace mlir {
namespace overlap {

/// Registers Overlap's passes and pipelines and the upstream passes they
/// use. Safe to call more than once (registration happens once per
/// process).
void registerAllPasses();

/// Overlap's own passes and pipelines only (for a host that registers the
/// upstream passes itself, e.g. a stock mlir-opt loading the pass plugin).
void registerOverlapPassesAndPipelines();

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_INITALLPASSES_H

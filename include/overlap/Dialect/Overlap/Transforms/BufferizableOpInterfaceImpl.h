//===- BufferizableOpInterfaceImpl.h - Bufferize overlap ops -*- C++ -*-===//
//
// One-shot bufferization models of the overlap ops.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define OVERLAP_DIALECT_OVERLAP_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace overlap {
/// Tile collectives bufferize in place (all-reduce) or into a new buffer
/// (reduce-scatter, all-gather). Fused ops are rejected with an error that
/// says to decompose them first.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_DIALECT_OVERLAP_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

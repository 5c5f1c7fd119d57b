//===- Tosa.h - What the compile knows of tosa.matmul -----------*- C++ -*-===//
//
// Shared by overlap-tosa-zero-points (TosaZeroPoints.cpp), which refuses a
// tosa.matmul whose result type its operands contradict, and the compile's
// input repair (lib/Compiler/Input.cpp), which repairs one that is only
// returned.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_TRANSFORMS_TOSA_H
#define OVERLAP_DIALECT_OVERLAP_TRANSFORMS_TOSA_H

#include "mlir/Dialect/Tosa/IR/TosaOps.h"

#include <optional>

namespace mlir {
namespace overlap {

/// `op`'s result shape with every size that its operands ([batch, M, K] x
/// [batch, K, N]) contradict replaced by theirs (where both are static);
/// nullopt unless the operands and the result are ranked of rank 3. Equal
/// to the result's shape when nothing contradicts it (MLIR 22's
/// shard-partition splits the operands and leaves the result unsplit).
std::optional<SmallVector<int64_t>>
tosaMatmulShapeOfOperands(tosa::MatMulOp op);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_DIALECT_OVERLAP_TRANSFORMS_TOSA_H

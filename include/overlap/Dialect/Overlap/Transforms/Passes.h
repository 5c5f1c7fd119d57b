//===- Passes.h - Overlap dialect passes --------------------*- C++ -*-===//
//
// Declares the passes of the `overlap` dialect and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_TRANSFORMS_PASSES_H
#define OVERLAP_DIALECT_OVERLAP_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

namespace mlir {
namespace linalg {
class LinalgDialect;
} // namespace linalg
namespace tensor {
class TensorDialect;
} // namespace tensor

namespace overlap {

#define GEN_PASS_DECL
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_DIALECT_OVERLAP_TRANSFORMS_PASSES_H

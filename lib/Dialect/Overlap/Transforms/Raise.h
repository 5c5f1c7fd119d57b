//===- Raise.h - What overlap-raise fuses, and why not -------*- C++ -*-===//
//
// The raise rules, shared by overlap-raise (a remark on each collective it
// leaves) and overlap-check-collectives (an error on each that is left).
// Private to the Transforms library.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_RAISE_H
#define OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_RAISE_H

#include "mlir/IR/Operation.h"

#include <string>

namespace mlir {
namespace overlap {

/// Why overlap-raise does not fuse the shard op `op` with a matmul; empty
/// when it would.
std::string whyNotRaised(Operation *op);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_RAISE_H

//===- PointToPoint.h - shard.send / shard.recv as exchanges ----*- C++ -*-===//
//
// Part of overlap-expand-collectives (PointToPoint.cpp says how).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_TRANSFORMS_POINTTOPOINT_H
#define OVERLAP_DIALECT_OVERLAP_TRANSFORMS_POINTTOPOINT_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"

#include <string>

namespace mlir {
namespace overlap {

/// Writes the shard.send and shard.recv ops under `root` with the
/// collectives the runtime has. In each function, the k-th send and the
/// k-th recv on one grid and axes, of one tensor type, pair up (MPI's
/// non-overtaking order between two ranks) when the send dominates the
/// recv: the send stacks every group rank's input and destination (two
/// all_gathers), and the recv takes the block of its source, checking at
/// run time that the source sent to it (without a source: that exactly
/// one rank did, and takes that one's). A send that nothing receives is a
/// buffered send nobody reads: its result is its input, with a remark. A
/// recv with no send to pair is left for overlap-check-collectives, which
/// says why (whyNotPaired).
void expandPointToPoint(Operation *root, SymbolTableCollection &symbols);

/// Why `op` (a shard.send or shard.recv left after expandPointToPoint)
/// is not lowered; empty for a send expandPointToPoint lowers.
std::string whyNotPaired(Operation *op, SymbolTableCollection &symbols);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_DIALECT_OVERLAP_TRANSFORMS_POINTTOPOINT_H

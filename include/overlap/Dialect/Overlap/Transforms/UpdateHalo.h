//===- UpdateHalo.h - shard.update_halo as gathers and slices ---*- C++ -*-===//
//
// Part of overlap-lower-collectives (UpdateHalo.cpp says how).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_TRANSFORMS_UPDATEHALO_H
#define OVERLAP_DIALECT_OVERLAP_TRANSFORMS_UPDATEHALO_H

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include <string>

namespace mlir {
namespace overlap {

/// Why `op` cannot be written as gathers and slices (dynamic shapes or halo
/// sizes, a dimension split over several grid axes, ...); empty when it
/// can.
std::string whyNotExpanded(shard::UpdateHaloOp op,
                           SymbolTableCollection &symbols);

/// `op`'s result, built at `b`'s insertion point from shard.all_gathers of
/// the boundary rows and slices (whyNotExpanded(op) must be empty).
Value expandUpdateHalo(OpBuilder &b, shard::UpdateHaloOp op,
                       SymbolTableCollection &symbols);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_DIALECT_OVERLAP_TRANSFORMS_UPDATEHALO_H

//===- OverlapOps.h - Overlap dialect operations ------------*- C++ -*-===//
//
// Declares the operations of the `overlap` dialect and the helpers that
// their verifiers and the passes share.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_IR_OVERLAPOPS_H
#define OVERLAP_DIALECT_OVERLAP_IR_OVERLAPOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "overlap/Dialect/Overlap/IR/OverlapDialect.h"

namespace mlir {
namespace overlap {

/// Side-effect resource for the signal flags of `overlap.signal/wait`, so
/// that no transformation moves a matmul across a signal or a collective
/// across a wait.
struct SignalResource : public SideEffects::Resource::Base<SignalResource> {
  StringRef getName() final { return "<OverlapSignal>"; }
};

/// Whether `op` is a fused matmul + collective op, the ops a plan
/// partitions: matmul_all_reduce, matmul_reduce_scatter, all_gather_matmul,
/// all_to_all_matmul, matmul_all_to_all.
bool isFusedMatmul(Operation *op);

/// An element type overlap.gemm's factors (and overlap_gemm's) take: f32,
/// f16, bf16.
bool isGemmElementType(Type type);

/// Whether `op` is a tile-level collective (all_reduce, reduce_scatter,
/// all_gather, all_to_all): work for the comm stream.
bool isTileCollective(Operation *op);

/// Experts per rank of a fused all-to-all op (dimension 0 of B when it has
/// rank 3); 1 for every other op.
int64_t getExpertsPerRank(Operation *op);

/// Size of the process group that `gridAxes` of `grid` form: the product of
/// the grid's extents along those axes, or ShapedType::kDynamic when one of
/// them is dynamic.
int64_t getGroupSize(shard::GridOp grid, ArrayRef<int16_t> gridAxes);

/// Group size of the grid and axes named by `op`'s `grid` and `grid_axes`
/// attributes (overlap and shard collectives alike); ShapedType::kDynamic
/// when unknown.
int64_t groupSizeOf(Operation *op, SymbolTableCollection &symbols);

/// Resolves `gridSymbol` from `op` and checks `gridAxes` against it. Emits an
/// error on `op` and fails when the symbol is missing, is not a
/// `shard.grid`, or an axis is out of range or repeated. On success returns
/// the grid.
FailureOr<shard::GridOp> verifyGroup(Operation *op,
                                     FlatSymbolRefAttr gridSymbol,
                                     ArrayRef<int16_t> gridAxes,
                                     SymbolTableCollection &symbolTable);

} // namespace overlap
} // namespace mlir

#define GET_OP_CLASSES
#include "overlap/Dialect/Overlap/IR/OverlapOps.h.inc"

#endif // OVERLAP_DIALECT_OVERLAP_IR_OVERLAPOPS_H

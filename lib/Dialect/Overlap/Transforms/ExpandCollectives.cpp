//===- ExpandCollectives.cpp - Shard ops as the collectives the runtime has ===//
//
// overlap-expand-collectives: the shard ops that have no runtime call of
// their own are written with ones that have, first in overlap-pipeline, so
// that overlap-raise sees what they became (a shard.reduce after a matmul
// is fused like the all_reduce it is written as):
//
//   reduce (root)     shard.all_reduce: every rank computes the root's
//                     result (the others' is undefined, so any value is
//                     right), in the result's element type.
//   gather (root)     shard.all_gather along gather_axis, likewise.
//   broadcast (root)  every rank stacks its input ([group, ...], one
//                     all_gather) and keeps the root's block.
//   scatter (root)    the broadcast, then shard.all_slice along
//                     scatter_axis (each rank's block, no communication).
//   shift             along shift_axis the rank at i takes the input of the
//                     rank at i - offset (modulo the axis when `rotate`,
//                     else a rank with no such source keeps its own
//                     input): a stack along that axis and one block.
//   update_halo       UpdateHalo.cpp.
//   i1                every one of these on booleans is written with
//                     collectives of booleans, which overlap-lower-collectives
//                     runs on bytes (zero-extended, so max is or, min is
//                     and, and a sum keeps its low bit, as i1 arithmetic
//                     wraps) and truncates back.
//
// The stacks move the group size times the data a rooted or neighbour
// exchange would: the price of needing no rooted or point-to-point call.
// shard.send and shard.recv: PointToPoint.cpp (the k-th send and the k-th
// recv of a function on one grid's axes pair up; a recv with no send is
// left, and overlap-check-collectives says why).
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/IR/OverlapOps.h"
#include "overlap/Dialect/Overlap/Transforms/Passes.h"
#include "overlap/Dialect/Overlap/Transforms/PointToPoint.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"
#include "overlap/Dialect/Overlap/Transforms/UpdateHalo.h"

#include "Raise.h"
#include "TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPEXPANDCOLLECTIVES
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

shard::GridOp gridOf(Operation *op, SymbolTableCollection &symbols) {
  auto gridAttr = op->getAttrOfType<FlatSymbolRefAttr>("grid");
  if (!gridAttr)
    return {};
  return symbols.lookupNearestSymbolFrom<shard::GridOp>(op, gridAttr);
}

ArrayRef<int16_t> axesOf(Operation *op) {
  if (auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes"))
    return axes.asArrayRef();
  return {};
}

/// The root's static in-group multi-index (dynamic entries as
/// ShapedType::kDynamic) of a rooted op.
std::optional<ArrayRef<int64_t>> rootOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<ArrayRef<int64_t>>>(op)
      .Case<shard::BroadcastOp, shard::GatherOp, shard::ScatterOp,
            shard::ReduceOp>([](auto rooted) { return rooted.getRoot(); })
      .Default([](Operation *) { return std::nullopt; });
}

ValueRange rootValuesOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, ValueRange>(op)
      .Case<shard::BroadcastOp, shard::GatherOp, shard::ScatterOp,
            shard::ReduceOp>(
          [](auto rooted) { return rooted.getRootDynamic(); })
      .Default([](Operation *) { return ValueRange(); });
}

/// The root's index in its group (row-major over the grid axes, as the
/// stack orders blocks), clamped into the group when it is dynamic.
Value linearRoot(OpBuilder &b, Location loc, Operation *op,
                 shard::GridOp grid) {
  ArrayRef<int64_t> root = *rootOf(op);
  ValueRange dynamic = rootValuesOf(op);
  ArrayRef<int16_t> axes = axesOf(op);
  SmallVector<Value> coords;
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (!ShapedType::isDynamic(root[i])) {
      coords.push_back(arith::ConstantIndexOp::create(b, loc, root[i]));
      continue;
    }
    Value coord = dynamic.front();
    dynamic = dynamic.drop_front();
    coords.push_back(arith::MaxSIOp::create(
        b, loc,
        arith::MinSIOp::create(
            b, loc, coord,
            arith::ConstantIndexOp::create(b, loc,
                                           grid.getShape()[axis] - 1)),
        arith::ConstantIndexOp::create(b, loc, 0)));
  }
  return linearInGroup(b, loc, grid, axes, coords);
}

/// The root's block of every rank's `input`: what a broadcast gives.
Value broadcastFromRoot(OpBuilder &b, Location loc, Operation *op,
                        Value input, shard::GridOp grid) {
  ArrayRef<int16_t> axes = axesOf(op);
  Value all = stackGroup(b, loc, input, grid, axes, getGroupSize(grid, axes));
  return pickBlock(b, loc, all, linearRoot(b, loc, op, grid));
}

Value expandShift(OpBuilder &b, shard::ShiftOp op, shard::GridOp grid) {
  Location loc = op.getLoc();
  int16_t axis = int16_t(op.getShiftAxis().getSExtValue());
  int64_t extent = grid.getShape()[axis];
  int64_t offset = op.getOffset();
  Value input = op.getInput();
  if (extent == 1 || (op.getRotate() && offset % extent == 0) ||
      offset == 0)
    return input;
  Value all = stackGroup(b, loc, input, grid, {axis}, extent);
  Value at = groupRankOf(b, loc, grid, {axis});
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  if (op.getRotate()) {
    // (at - offset) mod extent, kept non-negative.
    int64_t step = ((-offset) % extent + extent) % extent;
    Value source = arith::RemUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, at, index(step)), index(extent));
    return pickBlock(b, loc, all, source);
  }
  Value source = arith::SubIOp::create(b, loc, at, index(offset));
  Value has = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, source,
                            index(0)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, source,
                            index(extent)));
  Value clamped = arith::MaxSIOp::create(
      b, loc, arith::MinSIOp::create(b, loc, source, index(extent - 1)),
      index(0));
  return selectTensor(b, loc, has, pickBlock(b, loc, all, clamped), input);
}

} // namespace

bool mlir::overlap::isExpandedCollective(Operation *op) {
  return isa<shard::BroadcastOp, shard::GatherOp, shard::ScatterOp,
             shard::ReduceOp, shard::ShiftOp, shard::UpdateHaloOp,
             shard::SendOp, shard::RecvOp>(op);
}

std::string mlir::overlap::whyNotExpanded(Operation *op,
                                          SymbolTableCollection &symbols) {
  if (auto halo = dyn_cast<shard::UpdateHaloOp>(op))
    return whyNotExpanded(halo, symbols);
  if (isa<shard::SendOp, shard::RecvOp>(op))
    return whyNotPaired(op, symbols);
  auto input = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!input || !result || !input.hasStaticShape() || !result.hasStaticShape())
    return "a shape is dynamic; the runtime's collectives take static "
           "element counts";
  shard::GridOp grid = gridOf(op, symbols);
  if (!grid || llvm::any_of(grid.getShape(), ShapedType::isDynamic))
    return "its grid is missing or has a dynamic shape";
  // i1 in and out: the collectives it is written with move bytes
  // (overlap-lower-collectives).
  bool booleans = input.getElementType().isSignlessInteger(1) &&
                  result.getElementType().isSignlessInteger(1);
  for (Type type : {input.getElementType(), result.getElementType()})
    if (!booleans && !isRuntimeElementType(type))
      return "its element type " + remarkText(type) +
             " is not one the runtime's collectives take (f32, f16, bf16, "
             "f64, i8, i16, i32, i64; i1 when both the input and the result "
             "are i1)";
  ArrayRef<int16_t> axes = axesOf(op);
  if (auto shift = dyn_cast<shard::ShiftOp>(op)) {
    int64_t axis = shift.getShiftAxis().getSExtValue();
    if (!llvm::is_contained(axes, axis))
      return "its shift axis " + std::to_string(axis) +
             " is not one of its grid axes";
  }
  if (auto scatter = dyn_cast<shard::ScatterOp>(op)) {
    int64_t dim = scatter.getScatterAxis().getSExtValue();
    int64_t group = getGroupSize(grid, axes);
    if (dim < 0 || dim >= input.getRank() ||
        input.getDimSize(dim) % group != 0)
      return "its scatter dimension does not split into " +
             std::to_string(group) + " equal blocks";
  }
  if (isa<shard::BroadcastOp, shard::GatherOp, shard::ScatterOp,
          shard::ShiftOp>(op) &&
      input.getElementType() != result.getElementType())
    return "it changes the element type";
  return "";
}

Value mlir::overlap::expandCollective(OpBuilder &b, Operation *op,
                                      SymbolTableCollection &symbols) {
  Location loc = op->getLoc();
  if (auto halo = dyn_cast<shard::UpdateHaloOp>(op))
    return expandUpdateHalo(b, halo, symbols);
  shard::GridOp grid = gridOf(op, symbols);
  auto gridRef = FlatSymbolRefAttr::get(grid.getSymNameAttr());
  auto axes = b.getDenseI16ArrayAttr(axesOf(op));
  Type resultType = op->getResult(0).getType();
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](shard::ReduceOp reduce) -> Value {
        return shard::AllReduceOp::create(
            b, loc, resultType, gridRef, axes, reduce.getInput(),
            reduce.getReductionAttr());
      })
      .Case([&](shard::GatherOp gather) -> Value {
        return shard::AllGatherOp::create(b, loc, resultType, gridRef, axes,
                                          gather.getInput(),
                                          gather.getGatherAxisAttr());
      })
      .Case([&](shard::BroadcastOp broadcast) -> Value {
        return broadcastFromRoot(b, loc, op, broadcast.getInput(), grid);
      })
      .Case([&](shard::ScatterOp scatter) -> Value {
        Value whole = broadcastFromRoot(b, loc, op, scatter.getInput(), grid);
        return shard::AllSliceOp::create(b, loc, resultType, gridRef, axes,
                                         whole, scatter.getScatterAxisAttr());
      })
      .Case([&](shard::ShiftOp shift) { return expandShift(b, shift, grid); })
      .Default([](Operation *) -> Value { return {}; });
}

namespace {

struct OverlapExpandCollectivesPass
    : public mlir::overlap::impl::OverlapExpandCollectivesBase<
          OverlapExpandCollectivesPass> {
  void runOnOperation() override {
    SymbolTableCollection symbols;
    expandPointToPoint(getOperation(), symbols);
    OpBuilder b(&getContext());
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isExpandedCollective(op) && op->getNumResults() == 1 &&
          isa<RankedTensorType>(op->getResult(0).getType()))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (!whyNotExpanded(op, symbols).empty())
        continue; // overlap-check-collectives says why
      b.setInsertionPoint(op);
      Value replacement = expandCollective(b, op, symbols);
      op->getResult(0).replaceAllUsesWith(replacement);
      op->erase();
    }
  }
};

} // namespace

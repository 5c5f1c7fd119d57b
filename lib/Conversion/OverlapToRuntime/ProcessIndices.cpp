//===- ProcessIndices.cpp - Ranks for shard's process indices ---*- C++ -*-===//
//
// Part of convert-overlap-to-runtime: shard.process_multi_index,
// process_linear_index and grid_shape become the runtime's rank, its
// number of ranks and constants.
//
//===----------------------------------------------------------------------===//

#include "RuntimeBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::overlap;
using namespace mlir::overlap::runtime_lowering;

/// shard.process_multi_index / process_linear_index (what shard-partition
/// uses to tell ranks apart): upstream's patterns turn a multi-index into
/// an affine.delinearize_index of the linear index (lower-affine lowers it
/// later), and the linear index, the rank in the grid's row-major order,
/// is the runtime's rank.
LogicalResult mlir::overlap::runtime_lowering::lowerProcessIndices(
    func::FuncOp func, RuntimeBuilder &rt, SymbolTableCollection &symbols) {
  // One walk: the multi-indices to rewrite, and every index op's grid,
  // which may have one dynamic extent (the runtime's world is the grid's
  // devices, so that extent is the world size over the static ones).
  SmallVector<Operation *> multi;
  WalkResult checked = func.walk([&](Operation *op) {
    if (!isa<shard::ProcessMultiIndexOp, shard::ProcessLinearIndexOp,
             shard::GridShapeOp>(op))
      return WalkResult::advance();
    auto gridSym = op->getAttrOfType<FlatSymbolRefAttr>("grid");
    auto grid = symbols.lookupNearestSymbolFrom<shard::GridOp>(op, gridSym);
    if (!grid) {
      op->emitOpError() << "cannot be lowered: grid " << gridSym
                        << " is missing";
      return WalkResult::interrupt();
    }
    if (isa<shard::ProcessMultiIndexOp>(op))
      multi.push_back(op);
    return WalkResult::advance();
  });
  if (checked.wasInterrupted())
    return failure();
  if (!multi.empty()) {
    // Only these ops and what the patterns make of them are rewritten
    // (grid_shape ops for the extents of a dynamic grid among them).
    RewritePatternSet patterns(func.getContext());
    shard::populateProcessMultiIndexOpLoweringPatterns(patterns, symbols);
    (void)applyOpPatternsGreedily(
        multi, std::move(patterns),
        GreedyRewriteConfig().setStrictness(
            GreedyRewriteStrictness::ExistingAndNewOps));
  }
  // What the patterns replaced is left without uses; one still used was
  // not lowered.
  WalkResult left = func.walk([&](shard::ProcessMultiIndexOp op) {
    if (op->use_empty()) {
      op->erase();
      return WalkResult::advance();
    }
    op->emitOpError() << "cannot be lowered: upstream's process-index "
                         "lowering left it";
    return WalkResult::interrupt();
  });
  if (left.wasInterrupted())
    return failure();
  // The grid's extents: constants, and the dynamic ones from the number
  // of ranks (gridExtents).
  SmallVector<shard::GridShapeOp> shapes;
  func.walk([&](shard::GridShapeOp op) { shapes.push_back(op); });
  for (shard::GridShapeOp op : shapes) {
    auto grid = symbols.lookupNearestSymbolFrom<shard::GridOp>(
        op, op.getGridAttr());
    OpBuilder &b = rt.builder();
    b.setInsertionPoint(op);
    Location loc = op.getLoc();
    ArrayRef<shard::GridAxis> axes = op.getAxes();
    SmallVector<Value> all =
        gridExtents(rt, loc, grid.getShape(), b.getIndexType());
    SmallVector<Value> extents;
    for (size_t i = 0; i < op->getNumResults(); ++i)
      extents.push_back(all[axes.empty() ? int64_t(i) : int64_t(axes[i])]);
    op->replaceAllUsesWith(extents);
    op->erase();
  }
  SmallVector<shard::ProcessLinearIndexOp> linear;
  func.walk([&](shard::ProcessLinearIndexOp op) { linear.push_back(op); });
  for (shard::ProcessLinearIndexOp op : linear) {
    OpBuilder &b = rt.builder();
    b.setInsertionPoint(op);
    Location loc = op->getLoc();
    Value rank = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        rt.call(loc, RuntimeFn::overlap_context_rank, rt.ctx));
    op->getResult(0).replaceAllUsesWith(rank);
    op->erase();
  }
  return success();
}

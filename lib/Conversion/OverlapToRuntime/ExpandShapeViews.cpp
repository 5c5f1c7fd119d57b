//===- ExpandShapeViews.cpp - Dynamic expand_shape as a view ----*- C++ -*-===//
//
// overlap-expand-shape-views (Passes.td): a memref.expand_shape of a
// row-major buffer that splits one dimension into several dynamic ones
// becomes a memref.reinterpret_cast with the row-major strides of its
// output shape. MLIR 22's expand-strided-metadata crashes on that
// expand_shape (an all_to_all over a grid axis of dynamic extent makes
// one: its received rows are split into [group, rows / group]).
//
//===----------------------------------------------------------------------===//

#include "overlap/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPEXPANDSHAPEVIEWS
#include "overlap/Conversion/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;

namespace {

struct DynamicExpandAsView : OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &b) const override {
    MemRefType source = op.getSrcType(), result = op.getResultType();
    // Only what upstream's lowering crashes on: a group of two or more
    // dynamic dims; and only from (to) the identity layout, whose strides
    // are the sizes' row-major products.
    bool crashes = llvm::any_of(op.getReassociationIndices(),
                                [&](ReassociationIndicesRef group) {
                                  return llvm::count_if(group, [&](int64_t d) {
                                           return result.isDynamicDim(d);
                                         }) > 1;
                                });
    if (!crashes)
      return b.notifyMatchFailure(op, "upstream's lowering takes it");
    if (!source.getLayout().isIdentity() || !result.getLayout().isIdentity())
      return b.notifyMatchFailure(op, "not row-major");
    Location loc = op.getLoc();
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> strides(sizes.size());
    int64_t inner = 1;
    Value innerValue;
    for (int64_t d = sizes.size() - 1; d >= 0; --d) {
      strides[d] = innerValue ? OpFoldResult(innerValue)
                              : OpFoldResult(b.getIndexAttr(inner));
      std::optional<int64_t> size = getConstantIntValue(sizes[d]);
      if (!innerValue && size) {
        inner *= *size;
        continue;
      }
      Value from = innerValue ? innerValue
                              : arith::ConstantIndexOp::create(b, loc, inner);
      innerValue = arith::MulIOp::create(
          b, loc, from, getValueOrCreateConstantIndexOp(b, loc, sizes[d]));
    }
    b.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, result, op.getSrc(), b.getIndexAttr(0), sizes, strides);
    return success();
  }
};

struct OverlapExpandShapeViewsPass
    : public mlir::overlap::impl::OverlapExpandShapeViewsBase<
          OverlapExpandShapeViewsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DynamicExpandAsView>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

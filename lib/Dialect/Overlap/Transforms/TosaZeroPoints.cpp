//===- TosaZeroPoints.cpp - tosa.matmul with run-time zero points -*- C++ -*-//
//
// overlap-tosa-zero-points: a tosa.matmul whose zero points are not
// constants (upstream's sharding-propagation tests pass them as function
// arguments) becomes (A - a_zp) x (B - b_zp) in linalg, as TOSA defines it;
// upstream's tosa-to-linalg-named takes constant zero points only.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"
#include "overlap/Dialect/Overlap/Transforms/Tosa.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPTOSAZEROPOINTS
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;

namespace {

/// `x - zp` elementwise in `type` (x and the one-element zp extended to
/// it first when they are narrower integers), zp read by every element.
Value subtractZeroPoint(PatternRewriter &b, Location loc, Value x, Value zp,
                        Type type) {
  auto xType = cast<RankedTensorType>(x.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  Value init = tensor::EmptyOp::create(b, loc, sizes, type);
  MLIRContext *ctx = b.getContext();
  int64_t rank = xType.getRank();
  auto zpType = cast<RankedTensorType>(zp.getType());
  SmallVector<AffineExpr> zeros(zpType.getRank(),
                                getAffineConstantExpr(0, ctx));
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 AffineMap::get(rank, 0, zeros, ctx),
                                 AffineMap::getMultiDimIdentityMap(rank, ctx)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{x, zp}, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               auto widen = [&](Value v) -> Value {
                 if (v.getType() == type)
                   return v;
                 if (isa<FloatType>(type))
                   return arith::ExtFOp::create(nb, nloc, type, v);
                 return arith::ExtSIOp::create(nb, nloc, type, v);
               };
               Value a = widen(args[0]), z = widen(args[1]);
               Value d =
                   isa<FloatType>(type)
                       ? arith::SubFOp::create(nb, nloc, a, z).getResult()
                       : arith::SubIOp::create(nb, nloc, a, z).getResult();
               linalg::YieldOp::create(nb, nloc, d);
             })
      .getResult(0);
}

struct MatMulWithRuntimeZeroPoints : OpRewritePattern<tosa::MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tosa::MatMulOp op,
                                PatternRewriter &b) const override {
    if (succeeded(op.getAZeroPoint()) && succeeded(op.getBZeroPoint()))
      return b.notifyMatchFailure(op, "constant zero points");
    auto resultType = dyn_cast<RankedTensorType>(op.getType());
    if (!resultType || !isa<RankedTensorType>(op.getA().getType()) ||
        !isa<RankedTensorType>(op.getB().getType()) ||
        !isa<RankedTensorType>(op.getAZp().getType()) ||
        !isa<RankedTensorType>(op.getBZp().getType()))
      return b.notifyMatchFailure(op, "unranked operands");
    Location loc = op.getLoc();
    Type out = resultType.getElementType();
    // Floats subtract in their own type (TOSA's float zero points are 0,
    // so the operands stay as they are); integers in the accumulator's.
    auto operandType = [&](Value v) {
      Type t = cast<RankedTensorType>(v.getType()).getElementType();
      return isa<FloatType>(t) ? t : out;
    };
    Value a = subtractZeroPoint(b, loc, op.getA(), op.getAZp(),
                                operandType(op.getA()));
    Value bm = subtractZeroPoint(b, loc, op.getB(), op.getBZp(),
                                 operandType(op.getB()));
    SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, a, 0),
                                       tensor::getMixedSize(b, loc, a, 1),
                                       tensor::getMixedSize(b, loc, bm, 2)};
    Value init = tensor::EmptyOp::create(b, loc, sizes, out);
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(out));
    Value acc = linalg::FillOp::create(b, loc, zero, init).getResult(0);
    Value product = linalg::BatchMatmulOp::create(b, loc, ValueRange{a, bm},
                                                  ValueRange{acc})
                        .getResult(0);
    if (product.getType() != resultType)
      product = tensor::CastOp::create(b, loc, resultType, product);
    b.replaceOp(op, product);
    return success();
  }
};

/// Upstream's shard-partition (MLIR 22) splits a tosa.matmul's operands
/// but leaves its result type unsplit, a program no lowering can run as
/// written.
LogicalResult checkResultShape(tosa::MatMulOp op) {
  std::optional<SmallVector<int64_t>> want =
      mlir::overlap::tosaMatmulShapeOfOperands(op);
  if (!want)
    return success();
  auto result = cast<RankedTensorType>(op.getType());
  for (int d = 0; d < 3; ++d)
    if ((*want)[d] != result.getDimSize(d))
      return op.emitOpError()
             << "has result type " << result << " but its operands "
             << op.getA().getType() << " and " << op.getB().getType()
             << " give [" << (*want)[0] << ", " << (*want)[1] << ", "
             << (*want)[2] << "] (dimension " << d
             << "): upstream's shard-partition splits a tosa.matmul's "
                "operands and leaves its result unsplit; annotate the "
                "result's sharding, or write the matmul as "
                "linalg.batch_matmul, which it partitions whole";
  return success();
}

struct OverlapTosaZeroPointsPass
    : mlir::overlap::impl::OverlapTosaZeroPointsBase<
          OverlapTosaZeroPointsPass> {
  void runOnOperation() override {
    WalkResult checked = getOperation()->walk([](tosa::MatMulOp op) {
      return failed(checkResultShape(op)) ? WalkResult::interrupt()
                                          : WalkResult::advance();
    });
    if (checked.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    patterns.add<MatMulWithRuntimeZeroPoints>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

std::optional<SmallVector<int64_t>>
mlir::overlap::tosaMatmulShapeOfOperands(tosa::MatMulOp op) {
  auto a = dyn_cast<RankedTensorType>(op.getA().getType());
  auto b = dyn_cast<RankedTensorType>(op.getB().getType());
  auto result = dyn_cast<RankedTensorType>(op.getType());
  if (!a || !b || !result || a.getRank() != 3 || b.getRank() != 3 ||
      result.getRank() != 3)
    return std::nullopt;
  SmallVector<int64_t> shape(result.getShape());
  int64_t operands[3] = {a.getDimSize(0), a.getDimSize(1), b.getDimSize(2)};
  for (int d = 0; d < 3; ++d)
    if (!ShapedType::isDynamic(operands[d]) && !ShapedType::isDynamic(shape[d]))
      shape[d] = operands[d];
  return shape;
}

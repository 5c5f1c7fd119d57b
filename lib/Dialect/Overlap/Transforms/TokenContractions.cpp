//===- TokenContractions.cpp - Weight gradients as GEMMs -------*- C++ -*-===//
//
// Part of overlap-raise's normalization: a contraction over the tokens,
// C[m, n] = sum over t... of A[t..., m] * B[t..., n] (the weight gradient
// x^T . dy that jax.grad of a Dense layer writes, over [T] or [b, s]
// tokens, before the data-parallel psum or the FSDP psum_scatter), becomes
// a 2-D linalg.matmul whose A is a linalg.transpose of the flattened
// [T, M] operand. The raise rules then see the textbook pair; the
// transpose is never materialized: overlap-decompose slices the columns
// of the untransposed operand per tile and overlap-fold-into-gemms reads
// each slice transposed (the GEMM's transpose_a flag, cuBLASLt's TRANSB).
//
// JAX writes the gradient of `x @ w` as dot(dy, x) over the tokens
// followed by a transpose ([N, K] -> [K, N]), which overlap-raise's
// SinkLayout moves past the collective (a reduce-scatter then cuts axis 1).
// Since (X^T Y)^T = Y^T X, the transpose is folded into the product by
// swapping its factors, and a reduce-scatter along axis 1 becomes one
// along axis 0 (rows, which the fused op tiles). jnp's `(dy.T @ x).T`
// writes the inner transpose as an op and a plain contraction of it; that
// becomes a linalg.matmul of the transposed operand first. Every element
// is the same sum in the same order: results are bit-identical.
//
//===----------------------------------------------------------------------===//

#include "Raise.h"
#include "TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"

using namespace mlir;
using namespace mlir::overlap;

namespace {

/// Whether `op` is C[m, n] += A[t..., m] * B[t..., n]: one or more
/// contracted loops leading A and B in the same order, A's and B's last
/// dims the rows and the columns of a 2-D C, static shapes.
bool isTokenContraction(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1)
    return false;
  if (isa<linalg::GenericOp>(op)) {
    if (!isMatmulBody(*op.getBlock()))
      return false;
  } else if (!isa<linalg::MatmulOp, linalg::ContractOp>(op)) {
    return false;
  }
  if (auto cast = op->getAttrOfType<linalg::TypeFnAttr>("cast");
      cast && cast.getValue() != linalg::TypeFn::cast_signed)
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap a = maps[0], b = maps[1], c = maps[2];
  unsigned rank = a.getNumResults();
  if (rank < 2 || b.getNumResults() != rank || c.getNumResults() != 2 ||
      op.getNumLoops() != rank + 1)
    return false;
  std::optional<unsigned> m = dimPos(a.getResult(rank - 1)),
                          n = dimPos(b.getResult(rank - 1));
  if (!m || !n || dimPos(c.getResult(0)) != m || dimPos(c.getResult(1)) != n ||
      *m == *n)
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators[*m] != utils::IteratorType::parallel ||
      iterators[*n] != utils::IteratorType::parallel)
    return false;
  llvm::SmallDenseSet<unsigned> contracted;
  for (unsigned i = 0; i + 1 < rank; ++i) {
    std::optional<unsigned> t = dimPos(a.getResult(i));
    if (!t || dimPos(b.getResult(i)) != t || *t == *m || *t == *n ||
        iterators[*t] != utils::IteratorType::reduction ||
        !contracted.insert(*t).second)
      return false;
  }
  return llvm::all_of(op->getOperandTypes(), [](Type t) {
    return cast<RankedTensorType>(t).hasStaticShape();
  });
}

/// Whether `value` reaches a shard all-reduce or reduce-scatter through
/// single uses of casts, 2-D transposes and elementwise ops of one input:
/// the products worth normalizing.
bool reachesReduction(Value value) {
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    if (isa<shard::AllReduceOp, shard::ReduceScatterOp>(user))
      return true;
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!isa<tensor::CastOp, linalg::TransposeOp>(user) &&
        !(generic && isPlainElementwise(generic)))
      return false;
    value = user->getResult(0);
  }
  return false;
}

/// [d0, ..., dr] -> [d0 * ... * d(r-1), dr], or `v` itself at rank 2.
Value flattenTokens(PatternRewriter &rewriter, Location loc, Value v) {
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  if (rank == 2)
    return v;
  ReassociationIndices tokens;
  for (int64_t i = 0; i + 1 < rank; ++i)
    tokens.push_back(i);
  return tensor::CollapseShapeOp::create(
      rewriter, loc, v, SmallVector<ReassociationIndices>{tokens, {rank - 1}});
}

/// The [T, M] operand X of a 2-D linalg.transpose X^T on tensors, or null.
Value transposedMatrix(Value v) {
  auto transpose = v.getDefiningOp<linalg::TransposeOp>();
  if (!transpose || !transpose.hasPureTensorSemantics() ||
      transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    return {};
  return transpose.getInput();
}

/// A token contraction next to a sum collective -> [collapse_shape,]
/// linalg.transpose of A, 2-D linalg.matmul.
struct NormalizeTokenContraction
    : public OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (!isTokenContraction(op) || !reachesReduction(op->getResult(0)))
      return failure();
    Location loc = op.getLoc();
    Value a = flattenTokens(rewriter, loc, op.getDpsInputs()[0]);
    Value b = flattenTokens(rewriter, loc, op.getDpsInputs()[1]);
    Value c = op.getDpsInits()[0];
    Value product =
        linalg::MatmulOp::create(
            rewriter, loc, c.getType(),
            ValueRange{transposeTensor(rewriter, loc, a, {1, 0}), b},
            ValueRange{c})
            .getResult(0);
    remarkPassed(product.getDefiningOp(), "normalized", "overlap-raise",
                 "a contraction over the leading (token) dims is a matmul "
                 "of its transposed left operand, which the GEMMs read in "
                 "place");
    rewriter.replaceOp(op, product);
    return success();
  }
};

/// A 2-D contraction C[m, n] += A[m, k] * B[k, n] written with its maps
/// (linalg.generic, linalg.contract) whose A is a linalg.transpose of X
/// (`dy.T @ x` in jnp: X^T materialized as an op), next to a sum
/// collective -> linalg.matmul of the same operands, which
/// SwapTransposedProduct and the raise rules take. (The row-operand
/// normalization declines it when the collective cuts its columns: the
/// rows would then be X's.)
struct NormalizeTransposedOperand
    : public OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (isa<linalg::MatmulOp>(op) || !op.hasPureTensorSemantics() ||
        op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
        op.getNumLoops() != 3 || !transposedMatrix(op.getDpsInputs()[0]) ||
        !reachesReduction(op->getResult(0)))
      return failure();
    if (isa<linalg::GenericOp>(op) ? !isMatmulBody(*op.getBlock())
                                   : !isa<linalg::ContractOp>(op))
      return failure();
    if (auto cast = op->getAttrOfType<linalg::TypeFnAttr>("cast");
        cast && cast.getValue() != linalg::TypeFn::cast_signed)
      return failure();
    MLIRContext *ctx = op.getContext();
    AffineExpr m, n, k;
    bindDims(ctx, m, n, k);
    SmallVector<AffineMap> plain = {AffineMap::get(3, 0, {m, k}, ctx),
                                    AffineMap::get(3, 0, {k, n}, ctx),
                                    AffineMap::get(3, 0, {m, n}, ctx)};
    if (op.getIndexingMapsArray() != plain ||
        op.getIteratorTypesArray() !=
            SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                             utils::IteratorType::parallel,
                                             utils::IteratorType::reduction} ||
        !llvm::all_of(op->getOperandTypes(), [](Type t) {
          return cast<RankedTensorType>(t).hasStaticShape();
        }))
      return failure();
    Value c = op.getDpsInits()[0];
    rewriter.replaceOp(
        op, linalg::MatmulOp::create(rewriter, op.getLoc(), c.getType(),
                                     op.getDpsInputs(), ValueRange{c})
                .getResult(0));
    return success();
  }
};

RankedTensorType transposedType(Type type) {
  auto t = cast<RankedTensorType>(type);
  return RankedTensorType::get({t.getDimSize(1), t.getDimSize(0)},
                               t.getElementType());
}

/// linalg.transpose (2-D) of [all-reduce / reduce-scatter along axis 1 /
/// elementwise op of one input]* of linalg.matmul(X^T, Y, C) -> the same
/// chain on linalg.matmul(Y^T, X, C^T): no transpose of the product, and
/// a reduce-scatter of it cuts rows.
struct SwapTransposedProduct : public OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::TransposeOp back,
                                PatternRewriter &rewriter) const override {
    if (!back.hasPureTensorSemantics() ||
        back.getPermutation() != ArrayRef<int64_t>{1, 0})
      return failure();
    // The ops between the product and the transpose, nearest first.
    SmallVector<Operation *> chain;
    Value v = back.getInput();
    linalg::MatmulOp mm;
    while (!mm) {
      Operation *def = v.getDefiningOp();
      if (!def || !v.hasOneUse())
        return failure();
      auto rs = dyn_cast<shard::ReduceScatterOp>(def);
      auto generic = dyn_cast<linalg::GenericOp>(def);
      if (isa<shard::AllReduceOp>(def) ||
          (rs && rs.getScatterAxis().getSExtValue() == 1) ||
          (generic && isPlainElementwise(generic))) {
        chain.push_back(def);
        v = def->getOperand(0);
        continue;
      }
      mm = dyn_cast<linalg::MatmulOp>(def);
      if (!mm || !mm.hasPureTensorSemantics() || mm.hasUserDefinedMaps() ||
          !transposedMatrix(mm.getInputs()[0]))
        return failure();
    }
    auto cType = dyn_cast<RankedTensorType>(mm.getOutputs()[0].getType());
    if (!cType || !cType.hasStaticShape())
      return failure();
    Location loc = mm.getLoc();
    rewriter.setInsertionPoint(back);
    Value x = transposedMatrix(mm.getInputs()[0]), y = mm.getInputs()[1];
    Value c = mm.getOutputs()[0], init;
    if (auto fill = c.getDefiningOp<linalg::FillOp>();
        fill && fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>()) {
      RankedTensorType type = transposedType(cType);
      init = linalg::FillOp::create(
                 rewriter, loc, fill.getInputs()[0],
                 tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         type.getElementType())
                     .getResult())
                 .getResult(0);
    } else {
      init = transposeTensor(rewriter, loc, c, {1, 0});
    }
    Value result = linalg::MatmulOp::create(
                       rewriter, loc, init.getType(),
                       ValueRange{transposeTensor(rewriter, loc, y, {1, 0}), x},
                       ValueRange{init})
                       .getResult(0);
    for (Operation *op : llvm::reverse(chain))
      result = rebuildTransposed(rewriter, op, result);
    remarkPassed(result.getDefiningOp(), "transpose-folded", "overlap-raise",
                 "the transpose of a product over the tokens is the product "
                 "of its factors swapped: no transposed copy of the result");
    rewriter.replaceOp(back, result);
    for (Operation *op : chain)
      rewriter.eraseOp(op);
    Value a = mm.getInputs()[0];
    rewriter.eraseOp(mm);
    if (Operation *def = a.getDefiningOp(); def && def->use_empty())
      rewriter.eraseOp(def);
    return success();
  }

  /// `op` (a link of the chain) applied to `input`, the transposed value
  /// of its operand.
  static Value rebuildTransposed(PatternRewriter &rewriter, Operation *op,
                                 Value input) {
    Location loc = op->getLoc();
    RankedTensorType type = transposedType(op->getResult(0).getType());
    if (auto ar = dyn_cast<shard::AllReduceOp>(op))
      return shard::AllReduceOp::create(rewriter, loc, type, ar.getGridAttr(),
                                        ar.getGridAxesAttr(), input,
                                        ar.getReductionAttr());
    if (auto rs = dyn_cast<shard::ReduceScatterOp>(op))
      return shard::ReduceScatterOp::create(
          rewriter, loc, type, rs.getGridAttr(), rs.getGridAxesAttr(), input,
          rs.getReductionAttr(), rewriter.getIndexAttr(0));
    auto generic = cast<linalg::GenericOp>(op);
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         type.getElementType());
    linalg::GenericOp moved = elementwiseGeneric(rewriter, loc, input, init);
    rewriter.cloneRegionBefore(generic.getRegion(), moved.getRegion(),
                               moved.getRegion().begin());
    return moved.getResult(0);
  }
};

} // namespace

void mlir::overlap::populateTokenContractionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<NormalizeTokenContraction, NormalizeTransposedOperand,
               SwapTransposedProduct>(patterns.getContext());
}

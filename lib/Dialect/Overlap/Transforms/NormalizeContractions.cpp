//===- NormalizeContractions.cpp - Frontend matmuls as 2-D ones -*- C++ -*-===//
//
// The first step of overlap-raise: the contractions frontends write next to
// a collective (PyTorch-layout [out, in] weights, [batch, seq, hidden]
// activations as linalg.generic, linalg.batch_matmul with a broadcast
// weight or linalg.contract) become a 2-D linalg.matmul with default maps
// between reshapes, and the reshapes move to the far side of the
// collective where that keeps its blocks contiguous, so the raise rules
// see the textbook pair. Nothing changes the arithmetic: the rows of the
// flattened product are computed exactly as before.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

#include "Raise.h"
#include "TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"
#include <functional>

using namespace mlir;
using namespace mlir::overlap;

namespace {

/// A contraction C[f..., n] += A[f..., k] * B[k, n] (or B[n, k]): the loop
/// positions of the free dims f (in A's and C's order), of n and of k.
struct ContractionForm {
  SmallVector<unsigned> free;
  unsigned n = 0, k = 0;
  bool transposedB = false;
};

std::optional<unsigned> dimPos(AffineExpr expr) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return dim.getPosition();
  return std::nullopt;
}

/// The body of a linalg.generic is exactly `out + ext(a) * ext(b)` (each
/// factor optionally widened by arith.extf), so it computes what
/// linalg.matmul computes.
bool isMatmulBody(Block &body) {
  auto ops = body.without_terminator();
  SmallVector<Operation *> list;
  for (Operation &op : ops)
    list.push_back(&op);
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || yield.getNumOperands() != 1)
    return false;
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value out = body.getArgument(2);
  Value product = add.getLhs() == out ? add.getRhs() : add.getLhs();
  if (add.getLhs() != out && add.getRhs() != out)
    return false;
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  auto factor = [&](Value v) -> Value {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>())
      return ext.getIn();
    return v;
  };
  Value x = factor(mul.getLhs()), y = factor(mul.getRhs());
  bool operandsOk = (x == body.getArgument(0) && y == body.getArgument(1)) ||
                    (x == body.getArgument(1) && y == body.getArgument(0));
  // Nothing else in the body: the add, the mul and at most two extf.
  return operandsOk && list.size() <= 4;
}

/// `op` in the form above, or nothing.
std::optional<ContractionForm> matchContraction(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1)
    return std::nullopt;
  if (isa<linalg::GenericOp>(op)) {
    if (!isMatmulBody(*op.getBlock()))
      return std::nullopt;
  } else if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp, linalg::ContractOp>(
                 op)) {
    return std::nullopt;
  }
  // Named ops may cast unsigned: not a float matmul.
  if (auto cast = op->getAttrOfType<linalg::TypeFnAttr>("cast");
      cast && cast.getValue() != linalg::TypeFn::cast_signed)
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap a = maps[0], b = maps[1], c = maps[2];
  if (a.getNumResults() < 2 || b.getNumResults() != 2 ||
      c.getNumResults() != a.getNumResults())
    return std::nullopt;
  ContractionForm form;
  unsigned rank = a.getNumResults();
  for (unsigned i = 0; i + 1 < rank; ++i) {
    std::optional<unsigned> fa = dimPos(a.getResult(i)),
                            fc = dimPos(c.getResult(i));
    if (!fa || fa != fc)
      return std::nullopt;
    form.free.push_back(*fa);
  }
  std::optional<unsigned> k = dimPos(a.getResult(rank - 1)),
                          n = dimPos(c.getResult(rank - 1));
  std::optional<unsigned> b0 = dimPos(b.getResult(0)),
                          b1 = dimPos(b.getResult(1));
  if (!k || !n || !b0 || !b1)
    return std::nullopt;
  if (*b0 == *k && *b1 == *n)
    form.transposedB = false;
  else if (*b0 == *n && *b1 == *k)
    form.transposedB = true;
  else
    return std::nullopt;
  form.k = *k;
  form.n = *n;
  // Every loop is one of f..., n, k, once; only k reduces.
  SmallVector<unsigned> all(form.free);
  all.push_back(form.n);
  all.push_back(form.k);
  if (all.size() != op.getNumLoops() ||
      llvm::SmallDenseSet<unsigned>(all.begin(), all.end()).size() !=
          all.size())
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned loop = 0; loop < iterators.size(); ++loop)
    if ((iterators[loop] == utils::IteratorType::reduction) != (loop == *k))
      return std::nullopt;
  for (Value v : op->getOperands())
    if (!cast<RankedTensorType>(v.getType()).hasStaticShape())
      return std::nullopt;
  return form;
}

/// Looks through tensor.cast and the reshape kind `Reshape` from `value`
/// to its producer.
template <typename Reshape> Operation *producerThrough(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (isa<tensor::CastOp, Reshape>(def))
      value = def->getOperand(0);
    else
      return def;
  }
  return nullptr;
}

/// Whether `op`'s result reaches a shard all-reduce / reduce-scatter (its
/// only user, through casts and expand_shape), or its first operand comes
/// from a shard all-gather (through casts and collapse_shape): the
/// contractions worth normalizing. Next to an all-to-all, only a 2-D one
/// (the expert GEMM of a dispatch or combine written `x @ w[0]`): a
/// batched one is raised as a batch_matmul, which flattening would hide.
bool nextToCollective(linalg::LinalgOp op) {
  bool twoD = cast<ShapedType>(op.getDpsInputs()[0].getType()).getRank() == 2;
  Value value = op->getResult(0);
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    if (isa<shard::AllReduceOp, shard::ReduceScatterOp>(user) ||
        (twoD && isa<shard::AllToAllOp>(user)))
      return true;
    // An elementwise op of one input (the rounding before a psum).
    auto elementwise = dyn_cast<linalg::GenericOp>(user);
    if (!isa<tensor::CastOp, tensor::ExpandShapeOp>(user) &&
        !(elementwise && isPlainElementwise(elementwise)))
      break;
    value = user->getResult(0);
  }
  Operation *producer =
      producerThrough<tensor::CollapseShapeOp>(op.getDpsInputs()[0]);
  return isa_and_nonnull<shard::AllGatherOp>(producer) ||
         (twoD && isa_and_nonnull<shard::AllToAllOp>(producer));
}

/// The free dim of `op` (a contraction of rank-`rank` A and C) that its
/// reduce-scatter or all-gather cuts, when a dim before it is not 1: then
/// the blocks are strided in the flattened rows, and the flattening must
/// put that dim first (Megatron's sequence parallelism on [b, s, h]).
std::optional<int64_t> stridedAxis(linalg::LinalgOp op, unsigned rank) {
  std::optional<int64_t> axis;
  Value value = op->getResult(0);
  while (value.hasOneUse() && !axis) {
    Operation *user = *value.getUsers().begin();
    if (auto scatter = dyn_cast<shard::ReduceScatterOp>(user))
      axis = scatter.getScatterAxis().getSExtValue();
    else if (auto generic = dyn_cast<linalg::GenericOp>(user);
             isa<tensor::CastOp>(user) ||
             (generic && isPlainElementwise(generic)))
      value = user->getResult(0);
    else
      break;
  }
  if (!axis)
    if (auto gather = dyn_cast_or_null<shard::AllGatherOp>(
            producerThrough<tensor::CastOp>(op.getDpsInputs()[0])))
      axis = gather.getGatherAxis().getSExtValue();
  if (!axis || *axis <= 0 || *axis + 1 >= static_cast<int64_t>(rank))
    return std::nullopt;
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(op.getDpsInits()[0].getType()).getShape();
  if (llvm::all_of(shape.take_front(*axis), [](int64_t d) { return d == 1; }))
    return std::nullopt;
  return axis;
}

/// A contraction next to a collective -> [collapse_shape,] (transpose B,)
/// 2-D linalg.matmul [, expand_shape]. When the collective cuts a free dim
/// after a non-unit one, A and C are transposed first so that dim leads
/// (and the product is transposed back): its blocks are then whole rows.
struct NormalizeContraction
    : public OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (auto mm = dyn_cast<linalg::MatmulOp>(op.getOperation());
        mm && !mm.hasUserDefinedMaps())
      return failure(); // already the textbook form
    std::optional<ContractionForm> form = matchContraction(op);
    if (!form || !nextToCollective(op))
      return failure();
    Location loc = op.getLoc();
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1];
    Value c = op.getDpsInits()[0];
    unsigned rank = cast<RankedTensorType>(a.getType()).getRank();
    SmallVector<int64_t> lead;
    if (std::optional<int64_t> axis = stridedAxis(op, rank)) {
      lead = axisFirst(*axis, rank);
      a = transposeTensor(rewriter, loc, a, lead);
      c = transposeTensor(rewriter, loc, c, lead);
    }
    auto cType = cast<RankedTensorType>(c.getType());
    // [f..., x] -> [prod f, x]
    SmallVector<ReassociationIndices> flatten;
    if (rank > 2) {
      ReassociationIndices rows;
      for (unsigned i = 0; i + 1 < rank; ++i)
        rows.push_back(i);
      flatten = {rows, {static_cast<int64_t>(rank - 1)}};
      a = tensor::CollapseShapeOp::create(rewriter, loc, a, flatten);
      c = tensor::CollapseShapeOp::create(rewriter, loc, c, flatten);
    }
    if (form->transposedB) {
      auto bType = cast<RankedTensorType>(b.getType());
      Value init = tensor::EmptyOp::create(
          rewriter, loc, {bType.getDimSize(1), bType.getDimSize(0)},
          bType.getElementType());
      b = linalg::TransposeOp::create(rewriter, loc, b, init,
                                      ArrayRef<int64_t>{1, 0})
              ->getResult(0);
    }
    Value product = linalg::MatmulOp::create(rewriter, loc, c.getType(),
                                             ValueRange{a, b}, ValueRange{c})
                        .getResult(0);
    if (rank > 2)
      product =
          tensor::ExpandShapeOp::create(rewriter, loc, cType, product, flatten);
    if (!lead.empty())
      product =
          transposeTensor(rewriter, loc, product, invertPermutation(lead));
    rewriter.replaceOp(op, product);
    return success();
  }
};

/// The position, in the collapsed shape, of dim `axis` of the expanded
/// shape `expanded` under `groups`, when cutting or concatenating along it
/// keeps blocks contiguous there: every dim before it in its group is 1.
std::optional<int64_t> collapsedAxis(ArrayRef<ReassociationIndices> groups,
                                     ArrayRef<int64_t> expanded, int64_t axis) {
  for (auto [pos, group] : llvm::enumerate(groups)) {
    if (!llvm::is_contained(group, axis))
      continue;
    for (int64_t d : group) {
      if (d == axis)
        return pos;
      if (expanded[d] != 1)
        return std::nullopt;
    }
  }
  return std::nullopt;
}

/// The layout ops the collectives move across: a tensor.expand_shape (or
/// collapse_shape) or a linalg.transpose. `axis` of the layout op's result
/// is the returned dim of its source, when a cut or a concatenation along
/// it stays one block there (for a reshape: every dim before it in its
/// group is 1).
std::optional<int64_t> sourceAxis(Operation *layout, int64_t axis) {
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(layout))
    return collapsedAxis(expand.getReassociationIndices(),
                         expand.getResultType().getShape(), axis);
  if (auto transpose = dyn_cast<linalg::TransposeOp>(layout))
    return transpose.getPermutation()[axis];
  return std::nullopt;
}

/// `value` (shaped as `layout`'s source) given `layout`'s layout again,
/// with `type` (the layout op's result with the collective applied).
Value reapplyLayout(OpBuilder &b, Location loc, Operation *layout, Value value,
                    RankedTensorType type) {
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(layout))
    return tensor::ExpandShapeOp::create(b, loc, type, value,
                                         expand.getReassociationIndices());
  return transposeTensor(b, loc, value,
                         cast<linalg::TransposeOp>(layout).getPermutation());
}

/// shard.all_reduce / reduce_scatter of expand_shape(x) or
/// linalg.transpose(x) -> the collective of x (along the corresponding
/// axis), then the same reshape or transpose: the collective then meets
/// the matmul.
template <typename CollectiveOp>
struct SinkLayout : public OpRewritePattern<CollectiveOp> {
  using OpRewritePattern<CollectiveOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(CollectiveOp op,
                                PatternRewriter &rewriter) const override {
    Operation *layout = op.getInput().getDefiningOp();
    if (!isa_and_nonnull<tensor::ExpandShapeOp, linalg::TransposeOp>(layout) ||
        !layout->hasOneUse() ||
        !cast<RankedTensorType>(layout->getResult(0).getType())
             .hasStaticShape())
      return failure();
    Value src = layout->getOperand(0);
    auto srcType = cast<RankedTensorType>(src.getType());
    auto resultType = dyn_cast<RankedTensorType>(op.getResult().getType());
    if (!resultType || !resultType.hasStaticShape() ||
        !srcType.hasStaticShape() ||
        resultType.getElementType() != srcType.getElementType())
      return failure();
    Location loc = op.getLoc();
    Value collective;
    if constexpr (std::is_same_v<CollectiveOp, shard::ReduceScatterOp>) {
      std::optional<int64_t> axis =
          sourceAxis(layout, op.getScatterAxis().getSExtValue());
      if (!axis)
        return failure();
      SymbolTableCollection symbols;
      int64_t group = groupSizeOf(op, symbols);
      if (ShapedType::isDynamic(group) ||
          srcType.getDimSize(*axis) % group != 0)
        return failure();
      SmallVector<int64_t> shape(srcType.getShape());
      shape[*axis] /= group;
      collective = shard::ReduceScatterOp::create(
          rewriter, loc, srcType.clone(shape), op.getGridAttr(),
          op.getGridAxesAttr(), src, op.getReductionAttr(),
          rewriter.getIndexAttr(*axis));
    } else {
      collective = shard::AllReduceOp::create(
          rewriter, loc, srcType, op.getGridAttr(), op.getGridAxesAttr(), src,
          op.getReductionAttr());
    }
    rewriter.replaceOp(
        op, reapplyLayout(rewriter, loc, layout, collective, resultType));
    return success();
  }
};

/// collapse_shape or linalg.transpose of shard.all_gather(x) ->
/// shard.all_gather of the same collapse or transpose of x, along the
/// corresponding axis: the gather then meets the matmul.
template <typename LayoutOp>
struct HoistLayoutThroughGather : public OpRewritePattern<LayoutOp> {
  using OpRewritePattern<LayoutOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(LayoutOp layout,
                                PatternRewriter &rewriter) const override {
    constexpr bool isTranspose = std::is_same_v<LayoutOp, linalg::TransposeOp>;
    if constexpr (isTranspose)
      if (!layout.hasPureTensorSemantics())
        return failure();
    auto gather =
        layout->getOperand(0).template getDefiningOp<shard::AllGatherOp>();
    if (!gather || (!gather->hasOneUse() &&
                    !mayHoistLayoutOfSharedGather(gather, layout)))
      return failure();
    auto localType = dyn_cast<RankedTensorType>(gather.getInput().getType());
    auto resultType = cast<RankedTensorType>(layout->getResult(0).getType());
    if (!localType || !localType.hasStaticShape() ||
        !resultType.hasStaticShape())
      return failure();
    int64_t gatherAxis = gather.getGatherAxis().getSExtValue();
    Location loc = layout.getLoc();
    std::optional<int64_t> axis;
    Value local;
    if constexpr (isTranspose) {
      axis = invertPermutation(layout.getPermutation())[gatherAxis];
      local = transposeTensor(rewriter, loc, gather.getInput(),
                              layout.getPermutation());
    } else {
      axis = collapsedAxis(layout.getReassociationIndices(),
                           layout.getSrcType().getShape(), gatherAxis);
      if (!axis)
        return failure();
      local = tensor::CollapseShapeOp::create(rewriter, loc, gather.getInput(),
                                              layout.getReassociationIndices());
    }
    rewriter.replaceOpWithNewOp<shard::AllGatherOp>(
        layout, resultType, gather.getGridAttr(), gather.getGridAxesAttr(),
        local, rewriter.getIndexAttr(*axis));
    return success();
  }
};

/// `op`'s body moved onto `input` (any static shape): a new generic whose
/// result has `input`'s shape and `op`'s element type.
Value moveElementwise(PatternRewriter &rewriter, linalg::GenericOp op,
                      Value input) {
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(input.getType())
                  .clone(getElementTypeOrSelf(op.getResult(0).getType()));
  Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                       type.getElementType());
  linalg::GenericOp moved = elementwiseGeneric(rewriter, loc, input, init);
  rewriter.inlineRegionBefore(op.getRegion(), moved.getRegion(),
                              moved.getRegion().begin());
  return moved.getResult(0);
}

/// Two collapse_shapes of one value with the same groups are one: the
/// contractions normalized above each flatten the gathered operand, and the
/// gather can move past the collapse only when it has one user.
struct DedupCollapseShape : public OpRewritePattern<tensor::CollapseShapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::CollapseShapeOp collapse,
                                PatternRewriter &rewriter) const override {
    for (Operation *user : collapse.getSrc().getUsers()) {
      auto other = dyn_cast<tensor::CollapseShapeOp>(user);
      if (!other || other == collapse ||
          other.getResultType() != collapse.getResultType() ||
          other.getReassociationIndices() !=
              collapse.getReassociationIndices() ||
          !other->isBeforeInBlock(collapse) ||
          other->getBlock() != collapse->getBlock())
        continue;
      rewriter.replaceOp(collapse, other.getResult());
      return success();
    }
    return failure();
  }
};

/// Two identical linalg.transposes of one value (the `[b, s, h]` gather
/// that feeds Q, K and V is transposed once per contraction) -> the first,
/// so that the contractions share one gathered operand, which
/// MergeGatheredMatmuls then merges.
struct DedupTranspose : public OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    if (!transpose.hasPureTensorSemantics() ||
        !transpose.getInit().getDefiningOp<tensor::EmptyOp>())
      return failure();
    for (Operation *user : transpose.getInput().getUsers()) {
      auto other = dyn_cast<linalg::TransposeOp>(user);
      if (!other || other == transpose || !other.hasPureTensorSemantics() ||
          other->getBlock() != transpose->getBlock() ||
          !other->isBeforeInBlock(transpose) ||
          other.getInput() != transpose.getInput() ||
          other.getPermutation() != transpose.getPermutation() ||
          other->getResultTypes() != transpose->getResultTypes() ||
          !other.getInit().getDefiningOp<tensor::EmptyOp>())
        continue;
      rewriter.replaceOp(transpose, other->getResults());
      return success();
    }
    return failure();
  }
};

/// A rewrite of an elementwise linalg.generic (identity maps, one input,
/// no index reads: isPlainElementwise), which the patterns below move.
struct ElementwisePattern : public OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const final {
    if (!isPlainElementwise(op))
      return failure();
    return rewriteElementwise(op, rewriter);
  }
  virtual LogicalResult rewriteElementwise(linalg::GenericOp op,
                                           PatternRewriter &rewriter) const = 0;
};

/// An elementwise linalg.generic (identity maps, one input, no index
/// reads) of expand_shape(x) or linalg.transpose(x), feeding a reduction ->
/// the reshape of the generic of x, so that a rounding between a flattened
/// matmul and its collective keeps the two adjacent in the flattened
/// shape.
struct SinkExpandThroughElementwise : public ElementwisePattern {
  using ElementwisePattern::ElementwisePattern;

  LogicalResult rewriteElementwise(linalg::GenericOp op,
                                   PatternRewriter &rewriter) const override {
    Operation *reshape = op.getDpsInputs()[0].getDefiningOp();
    if (!isa_and_nonnull<tensor::ExpandShapeOp, linalg::TransposeOp>(reshape) ||
        !reshape->hasOneUse() ||
        !cast<RankedTensorType>(reshape->getOperand(0).getType())
             .hasStaticShape())
      return failure();
    // Only feeding a collective is worth it (the reshape then meets it).
    if (!op->hasOneUse() || !isa<shard::AllReduceOp, shard::ReduceScatterOp>(
                                *op->getUsers().begin()))
      return failure();
    auto outType = cast<RankedTensorType>(op.getResult(0).getType());
    Value flat = moveElementwise(rewriter, op, reshape->getOperand(0));
    rewriter.replaceOp(
        op, reapplyLayout(rewriter, op.getLoc(), reshape, flat, outType));
    return success();
  }
};

/// An elementwise linalg.generic (identity maps, one input, no index
/// reads, elements no wider than the input's) of a gathered tensor -> the
/// gather of the generic of the local part: the same values (the op is
/// elementwise, the gather only moves them), each rank computes 1/G of
/// them, no more bytes cross the wire, and the gather then feeds the
/// matmul after it (a cast or a scale between an all-gather and its
/// matmul).
struct HoistElementwiseThroughGather : public ElementwisePattern {
  using ElementwisePattern::ElementwisePattern;

  LogicalResult rewriteElementwise(linalg::GenericOp op,
                                   PatternRewriter &rewriter) const override {
    auto gather = op.getDpsInputs()[0].getDefiningOp<shard::AllGatherOp>();
    if (!gather || !gather->hasOneUse())
      return failure();
    auto localType = dyn_cast<RankedTensorType>(gather.getInput().getType());
    auto outType = cast<RankedTensorType>(op.getResult(0).getType());
    if (!localType || !localType.hasStaticShape() ||
        !outType.hasStaticShape() ||
        outType.getElementTypeBitWidth() > localType.getElementTypeBitWidth())
      return failure();
    // Only when a matmul consumes the result: then the gather meets it.
    if (!op->hasOneUse() || !isa<linalg::LinalgOp>(*op->getUsers().begin()))
      return failure();
    Value local = moveElementwise(rewriter, op, gather.getInput());
    rewriter.replaceOpWithNewOp<shard::AllGatherOp>(
        op, outType, gather.getGridAttr(), gather.getGridAxesAttr(), local,
        gather.getGatherAxisAttr());
    rewriter.eraseOp(gather);
    return success();
  }
};

} // namespace

namespace {

/// The constant a `linalg.fill` of a whole `tensor.empty` writes, or null.
Attribute filledConstant(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.hasPureTensorSemantics() ||
      !fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
    return {};
  Attribute value;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&value)))
    return {};
  return value;
}

/// `scf.if %rank0 { yield %zeros } else { yield <zeros again> }`: what
/// shard-partition emits for the accumulator of a matmul whose sum is
/// partial (the init on one rank, zeros on the others) when the init is
/// itself a fill of zeros. Both branches give the same tensor, so the
/// result is the then-branch's (when it is defined above the if; a new
/// fill otherwise). Without it every layer's accumulator has a dynamic
/// layout and an ownership known only at run time after bufferization.
struct FoldBranchesOfEqualFills : OpRewritePattern<scf::IfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(scf::IfOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getNumResults() == 0 || op.getElseRegion().empty())
      return failure();
    bool changed = false;
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      if (result.use_empty())
        continue;
      Value a = op.thenYield().getOperand(i), b = op.elseYield().getOperand(i);
      Attribute x = filledConstant(a), y = filledConstant(b);
      if (!x || x != y || a.getType() != b.getType() ||
          a.getType() != result.getType())
        continue;
      Value same = a;
      if (op->isAncestor(a.getDefiningOp())) {
        rewriter.setInsertionPoint(op);
        Operation *fill = a.getDefiningOp();
        Operation *init = rewriter.clone(
            *cast<linalg::FillOp>(fill).getOutputs()[0].getDefiningOp());
        Value scalar = arith::ConstantOp::create(rewriter, op.getLoc(),
                                                 cast<TypedAttr>(x));
        same = linalg::FillOp::create(rewriter, op.getLoc(), scalar,
                                      init->getResult(0))
                   .getResult(0);
      }
      rewriter.replaceAllUsesWith(result, same);
      changed = true;
    }
    return success(changed);
  }
};

} // namespace

void mlir::overlap::populateNormalizeContractionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FoldBranchesOfEqualFills>(patterns.getContext());
  patterns.add<NormalizeContraction, SinkLayout<shard::AllReduceOp>,
               SinkLayout<shard::ReduceScatterOp>,
               HoistLayoutThroughGather<tensor::CollapseShapeOp>,
               HoistLayoutThroughGather<linalg::TransposeOp>,
               DedupCollapseShape, DedupTranspose,
               SinkExpandThroughElementwise, HoistElementwiseThroughGather>(
      patterns.getContext());
  populateMergeGatheredMatmulPatterns(patterns);
  populateTokenContractionPatterns(patterns);
}

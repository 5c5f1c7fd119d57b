//===- NormalizeContractions.cpp - Frontend matmuls as 2-D ones -*- C++ -*-===//
//
// The first step of overlap-raise: the contractions frontends write next to
// a collective (PyTorch-layout [out, in] weights, [batch, seq, hidden]
// activations as linalg.generic, linalg.batch_matmul with a broadcast
// weight or linalg.contract; several contracted or free dims, as attention
// that keeps its heads writes; the tokens as the second operand, as a
// vmapped `w @ t` writes) become a 2-D linalg.matmul with default maps (a
// linalg.batch_matmul for experts beside an all-to-all) between reshapes,
// and the reshapes move to the far side of the collective where that keeps
// its blocks contiguous, so the raise rules see the textbook pair. Each
// element of the flattened product is the sum over the same row and column
// as before; several contracted dims are summed in the row operand's
// memory order, as any GEMM over the flattened K.
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

std::optional<unsigned> mlir::overlap::dimPos(AffineExpr expr) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return dim.getPosition();
  return std::nullopt;
}

bool mlir::overlap::isMatmulBody(Block &body) {
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

namespace {

/// The loops of a contraction C += A * B whose maps are projected
/// permutations, by the operands they index: all three (a batch loop, at
/// most one), one input and C (that input's free loops), both inputs (the
/// contracted loops, the only reductions). Any number of free and
/// contracted loops: `bshd,hdn->bsn` (an attention output projection
/// that keeps the heads) contracts two.
struct Contraction {
  /// The loops each operand indexes, in its dim order: inputs 0, 1, C.
  SmallVector<unsigned> dims[3];
  SmallVector<int64_t> extents;
  std::optional<unsigned> batch;
  SmallVector<unsigned> free[2];
  llvm::SmallDenseSet<unsigned> contracted;

  /// The input whose free loop `loop` is (0 or 1), or none.
  std::optional<unsigned> ownerOf(unsigned loop) const {
    for (unsigned i = 0; i < 2; ++i)
      if (llvm::is_contained(free[i], loop))
        return i;
    return std::nullopt;
  }
};

/// `op` in the form above, or nothing.
std::optional<Contraction> matchContraction(linalg::LinalgOp op) {
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
  for (Value v : op->getOperands())
    if (!cast<RankedTensorType>(v.getType()).hasStaticShape())
      return std::nullopt;
  Contraction form;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  unsigned loops = op.getNumLoops();
  for (unsigned i = 0; i < 3; ++i) {
    for (AffineExpr expr : maps[i].getResults()) {
      std::optional<unsigned> loop = dimPos(expr);
      if (!loop || llvm::is_contained(form.dims[i], *loop))
        return std::nullopt;
      form.dims[i].push_back(*loop);
    }
  }
  form.extents = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned loop = 0; loop < loops; ++loop) {
    bool in0 = llvm::is_contained(form.dims[0], loop),
         in1 = llvm::is_contained(form.dims[1], loop),
         inC = llvm::is_contained(form.dims[2], loop);
    bool reduced = iterators[loop] == utils::IteratorType::reduction;
    if (in0 && in1 && !inC && reduced)
      form.contracted.insert(loop);
    else if (in0 && in1 && inC && !reduced && !form.batch)
      form.batch = loop;
    else if (in0 != in1 && inC && !reduced)
      form.free[in0 ? 0 : 1].push_back(loop);
    else
      return std::nullopt;
  }
  if (form.free[0].empty() || form.free[1].empty() || form.contracted.empty())
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

/// The collectives around a contraction.
struct Neighbors {
  /// The shard all-reduce, reduce-scatter or all-to-all that the result
  /// reaches (its only user, through casts, expand_shape, transposes and
  /// elementwise ops of one input: the rounding before a psum).
  Operation *after = nullptr;
  /// The dim of C that `after` scatters (reduce-scatter) or splits
  /// (all-to-all), when the way there keeps the dims (no expand_shape).
  std::optional<int64_t> cutDim;
  /// The all-gather or all-to-all that produces each input (through casts
  /// and collapse_shape).
  Operation *before[2] = {nullptr, nullptr};
  /// The dim of each input that its all-gather concatenates (through casts
  /// only).
  std::optional<int64_t> gatherDim[2];
};

Neighbors neighborsOf(linalg::LinalgOp op) {
  Neighbors around;
  Value value = op->getResult(0);
  // Dim i of `value` is dim dimOf[i] of C, while `kept`.
  auto dimOf = llvm::to_vector(
      llvm::seq<int64_t>(0, cast<RankedTensorType>(value.getType()).getRank()));
  bool kept = true;
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    if (isa<shard::AllReduceOp, shard::ReduceScatterOp, shard::AllToAllOp>(
            user)) {
      around.after = user;
      std::optional<int64_t> axis;
      if (auto scatter = dyn_cast<shard::ReduceScatterOp>(user))
        axis = scatter.getScatterAxis().getSExtValue();
      else if (auto a2a = dyn_cast<shard::AllToAllOp>(user))
        axis = a2a.getSplitAxis().getSExtValue();
      if (axis && kept && *axis >= 0 &&
          *axis < static_cast<int64_t>(dimOf.size()))
        around.cutDim = dimOf[*axis];
      break;
    }
    auto transpose = dyn_cast<linalg::TransposeOp>(user);
    auto elementwise = dyn_cast<linalg::GenericOp>(user);
    if (transpose && transpose.hasPureTensorSemantics()) {
      SmallVector<int64_t> permuted;
      for (int64_t p : transpose.getPermutation())
        permuted.push_back(dimOf[p]);
      dimOf = permuted;
    } else if (isa<tensor::ExpandShapeOp>(user)) {
      kept = false;
    } else if (!isa<tensor::CastOp>(user) &&
               !(elementwise && isPlainElementwise(elementwise))) {
      break;
    }
    value = user->getResult(0);
  }
  for (unsigned i = 0; i < 2; ++i) {
    Value input = op.getDpsInputs()[i];
    Operation *producer = producerThrough<tensor::CollapseShapeOp>(input);
    if (isa_and_nonnull<shard::AllGatherOp, shard::AllToAllOp>(producer))
      around.before[i] = producer;
    if (auto gather = dyn_cast_or_null<shard::AllGatherOp>(
            producerThrough<tensor::CastOp>(input)))
      around.gatherDim[i] = gather.getGatherAxis().getSExtValue();
  }
  return around;
}

/// A contraction as the GEMM the fused ops take: C2[M, N] = A2[M, K] *
/// B2[K, N] (or, batched, C2[b, M, N] = A2[b, M, K] * B2[b, K, N]), each
/// of M, N and K a group of loops flattened in the order listed. `lhs`
/// is the input that gives the rows.
struct GemmForm {
  unsigned lhs = 0;
  std::optional<unsigned> batch;
  SmallVector<unsigned> m, n, k;
};

/// `loops` in the order `order` lists them.
SmallVector<unsigned> inOrder(ArrayRef<unsigned> order,
                              const llvm::SmallDenseSet<unsigned> &loops) {
  SmallVector<unsigned> result;
  for (unsigned loop : order)
    if (loops.contains(loop))
      result.push_back(loop);
  return result;
}

/// The GEMM that `op` (the contraction `form`, with the collectives
/// `around`) is normalized to, when it is worth it: next to a collective,
/// with the rows on the side the collective cuts. Nothing when `op` is
/// not next to one, or when its row operand would need its contracted
/// dims moved (a transposed A: A's K dims before its M dims).
std::optional<GemmForm> gemmFormOf(linalg::LinalgOp op, const Contraction &form,
                                   const Neighbors &around) {
  GemmForm gemm;
  gemm.batch = form.batch;
  bool twoD = llvm::all_of(op->getOperands(), [](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank() == 2;
  });
  // The input that a collective feeds gives the rows: the gathered
  // tokens of sequence parallelism, the dispatched tokens of experts
  // (input 1 where a per-token linear is vmapped, `w @ t`, and the
  // product comes out [out, tokens]). Input 1 only when its gathered dim
  // is one of its free dims.
  auto fedBy = [&](unsigned i) -> bool {
    Operation *producer = around.before[i];
    if (!producer)
      return false;
    if (isa<shard::AllToAllOp>(producer) && !twoD && !form.batch)
      return false;
    if (isa<shard::AllGatherOp>(producer) && form.batch)
      return false;
    if (i == 1 &&
        (!around.gatherDim[1] ||
         !llvm::is_contained(form.free[1], form.dims[1][*around.gatherDim[1]])))
      return isa<shard::AllToAllOp>(producer);
    return true;
  };
  // After: the rows are the side that holds the dim the collective cuts.
  auto cutOwner = [&]() -> std::optional<unsigned> {
    if (!around.cutDim)
      return std::nullopt;
    return form.ownerOf(form.dims[2][*around.cutDim]);
  };
  bool afterOk = false;
  if (around.after && form.batch)
    afterOk = isa<shard::AllToAllOp>(around.after);
  else if (around.after)
    afterOk = isa<shard::AllReduceOp, shard::ReduceScatterOp>(around.after) ||
              (twoD && isa<shard::AllToAllOp>(around.after));
  if (fedBy(0))
    gemm.lhs = 0;
  else if (fedBy(1))
    gemm.lhs = 1;
  else if (afterOk)
    gemm.lhs = cutOwner().value_or(0);
  else
    return std::nullopt;
  if (form.batch && !around.before[gemm.lhs] && !cutOwner())
    return std::nullopt;
  unsigned lhs = gemm.lhs, rhs = 1 - lhs;
  llvm::SmallDenseSet<unsigned> rows(form.free[lhs].begin(),
                                     form.free[lhs].end()),
      cols(form.free[rhs].begin(), form.free[rhs].end());
  gemm.m = inOrder(form.dims[lhs], rows);
  gemm.k = inOrder(form.dims[lhs], form.contracted);
  gemm.n = inOrder(form.dims[rhs], cols);
  // The row operand as it lies must be [batch, M..., K...].
  SmallVector<unsigned> wanted;
  if (gemm.batch)
    wanted.push_back(*gemm.batch);
  llvm::append_range(wanted, gemm.m);
  llvm::append_range(wanted, gemm.k);
  if (!llvm::equal(wanted, form.dims[lhs]))
    return std::nullopt;
  // When the collective cuts a row dim after a non-unit one, its blocks
  // are strided in the flattened rows: that dim goes first (and the
  // product is transposed back). Megatron's sequence parallelism on
  // [b, s, h].
  std::optional<unsigned> cut;
  if (around.cutDim && isa<shard::ReduceScatterOp>(around.after))
    cut = form.dims[2][*around.cutDim];
  else if (around.gatherDim[lhs] && around.before[lhs] &&
           isa<shard::AllGatherOp>(around.before[lhs]))
    cut = form.dims[lhs][*around.gatherDim[lhs]];
  if (cut && !gemm.batch) {
    auto *at = llvm::find(gemm.m, *cut);
    if (at != gemm.m.end() &&
        llvm::any_of(llvm::make_range(gemm.m.begin(), at),
                     [&](unsigned loop) { return form.extents[loop] != 1; })) {
      gemm.m.erase(at);
      gemm.m.insert(gemm.m.begin(), *cut);
    }
  }
  return gemm;
}

/// The permutation that takes an operand indexing `dims` (in its order)
/// to the order `order`: result dim i is operand dim perm[i].
SmallVector<int64_t> permutationTo(ArrayRef<unsigned> dims,
                                   ArrayRef<unsigned> order) {
  SmallVector<int64_t> perm;
  for (unsigned loop : order)
    perm.push_back(llvm::find(dims, loop) - dims.begin());
  return perm;
}

/// The reassociation that flattens consecutive groups of `sizes` dims.
SmallVector<ReassociationIndices> groupsOf(ArrayRef<size_t> sizes) {
  SmallVector<ReassociationIndices> groups;
  int64_t next = 0;
  for (size_t size : sizes) {
    ReassociationIndices group;
    for (size_t i = 0; i < size; ++i)
      group.push_back(next++);
    groups.push_back(group);
  }
  return groups;
}

/// `value` collapsed by `groups`, or itself when every group is one dim.
Value collapse(OpBuilder &b, Location loc, Value value,
               ArrayRef<ReassociationIndices> groups) {
  if (llvm::all_of(groups, [](const ReassociationIndices &group) {
        return group.size() == 1;
      }))
    return value;
  return tensor::CollapseShapeOp::create(b, loc, value, groups);
}

/// The accumulator `init` with its dims permuted: a fresh fill when `init`
/// is a fill of a tensor.empty (the zeros a frontend starts from), so the
/// GEMM's accumulator stays a fill the later passes recognize.
Value permutedInit(OpBuilder &b, Location loc, Value init,
                   ArrayRef<int64_t> perm) {
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return init;
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.hasPureTensorSemantics() ||
      !fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>())
    return transposeTensor(b, loc, init, perm);
  auto type = cast<RankedTensorType>(init.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  Value empty = tensor::EmptyOp::create(b, loc, shape, type.getElementType());
  return linalg::FillOp::create(b, loc, fill.getInputs()[0], empty)
      .getResult(0);
}

/// A contraction next to a collective -> [transpose,] [collapse_shape,]
/// 2-D linalg.matmul (or linalg.batch_matmul) [, expand_shape]
/// [, transpose]: several free or contracted dims flattened into M, N and
/// K; a PyTorch-layout weight transposed; the other input as the rows
/// when the collective feeds it (`jax.vmap(lambda t: w @ t)`, whose
/// product is [out, tokens]) or holds the dim a reduce-scatter cuts; and
/// the row dim a collective cuts first when a dim before it is not 1.
/// Each element of the product is the sum over the same A row and B
/// column as before; with several contracted dims the sum runs over them
/// in the row operand's memory order (any GEMM's K order).
struct NormalizeContraction
    : public OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    // Already the textbook forms.
    if (auto mm = dyn_cast<linalg::MatmulOp>(op.getOperation());
        mm && !mm.hasUserDefinedMaps())
      return failure();
    if (auto bm = dyn_cast<linalg::BatchMatmulOp>(op.getOperation());
        bm && !bm.hasUserDefinedMaps())
      return failure();
    std::optional<Contraction> form = matchContraction(op);
    if (!form)
      return failure();
    std::optional<GemmForm> gemm = gemmFormOf(op, *form, neighborsOf(op));
    if (!gemm)
      return failure();
    Location loc = op.getLoc();
    unsigned lhs = gemm->lhs, rhs = 1 - lhs;
    Value a = op.getDpsInputs()[lhs], b = op.getDpsInputs()[rhs];
    Value c = op.getDpsInits()[0];
    SmallVector<unsigned> batch;
    if (gemm->batch)
      batch.push_back(*gemm->batch);
    auto concat = [&](ArrayRef<unsigned> x, ArrayRef<unsigned> y) {
      SmallVector<unsigned> order(batch);
      llvm::append_range(order, x);
      llvm::append_range(order, y);
      return order;
    };
    auto groups = [&](size_t x, size_t y) {
      SmallVector<size_t> sizes;
      if (gemm->batch)
        sizes.push_back(1);
      sizes.push_back(x);
      sizes.push_back(y);
      return groupsOf(sizes);
    };
    size_t m = gemm->m.size(), n = gemm->n.size(), k = gemm->k.size();
    // A: [batch, M..., K...] (a transpose only to put a cut dim first).
    a = transposeTensor(
        rewriter, loc, a,
        permutationTo(form->dims[lhs], concat(gemm->m, gemm->k)));
    // C: [batch, M..., N...].
    SmallVector<int64_t> cPerm =
        permutationTo(form->dims[2], concat(gemm->m, gemm->n));
    c = permutedInit(rewriter, loc, c, cPerm);
    auto cType = cast<RankedTensorType>(c.getType());
    SmallVector<ReassociationIndices> aGroups = groups(m, k),
                                      cGroups = groups(m, n);
    a = collapse(rewriter, loc, a, aGroups);
    c = collapse(rewriter, loc, c, cGroups);
    // B: [batch, K..., N...] as it lies, or [batch, N..., K...] (a
    // PyTorch-layout weight) flattened and then transposed, or any other
    // order transposed first.
    SmallVector<unsigned> kn = concat(gemm->k, gemm->n),
                          nk = concat(gemm->n, gemm->k);
    if (llvm::equal(form->dims[rhs], nk)) {
      b = collapse(rewriter, loc, b, groups(n, k));
      unsigned rank = cast<RankedTensorType>(b.getType()).getRank();
      SmallVector<int64_t> swap = llvm::to_vector(llvm::seq<int64_t>(0, rank));
      std::swap(swap[rank - 2], swap[rank - 1]);
      b = transposeTensor(rewriter, loc, b, swap);
    } else {
      b = transposeTensor(rewriter, loc, b, permutationTo(form->dims[rhs], kn));
      b = collapse(rewriter, loc, b, groups(k, n));
    }
    Value product =
        gemm->batch
            ? linalg::BatchMatmulOp::create(rewriter, loc, c.getType(),
                                            ValueRange{a, b}, ValueRange{c})
                  .getResult(0)
            : linalg::MatmulOp::create(rewriter, loc, c.getType(),
                                       ValueRange{a, b}, ValueRange{c})
                  .getResult(0);
    if (product.getType() != cType)
      product =
          tensor::ExpandShapeOp::create(rewriter, loc, cType, product, cGroups);
    product = transposeTensor(rewriter, loc, product, invertPermutation(cPerm));
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
    if (!gather ||
        (!gather->hasOneUse() && !mayHoistLayoutOfSharedGather(gather, layout)))
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

/// linalg.transpose of [plain elementwise ops of] a linalg.transpose that
/// it undoes -> the elementwise ops of the first's input: what
/// normalization leaves where a frontend transposed a product
/// (`jax.vmap(lambda t: w @ t)`'s [out, tokens] back to [tokens, out],
/// after its bf16 rounding) that is now computed in the order the
/// frontend wanted. The elementwise ops compute the same values on any
/// layout.
struct CancelTransposes : public OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::TransposeOp outer,
                                PatternRewriter &rewriter) const override {
    if (!outer.hasPureTensorSemantics())
      return failure();
    // The elementwise ops between the two, nearest first.
    SmallVector<linalg::GenericOp> chain;
    Value v = outer.getInput();
    while (auto generic = v.getDefiningOp<linalg::GenericOp>()) {
      if (!isPlainElementwise(generic) || !v.hasOneUse())
        return failure();
      chain.push_back(generic);
      v = generic.getDpsInputs()[0];
    }
    auto inner = v.getDefiningOp<linalg::TransposeOp>();
    if (!inner || !inner.hasPureTensorSemantics() ||
        cast<ShapedType>(inner.getInput().getType()).getShape() !=
            cast<ShapedType>(outer->getResult(0).getType()).getShape())
      return failure();
    ArrayRef<int64_t> first = inner.getPermutation(),
                      second = outer.getPermutation();
    for (auto [i, p] : llvm::enumerate(second))
      if (first[p] != static_cast<int64_t>(i))
        return failure();
    Value result = inner.getInput();
    for (linalg::GenericOp op : llvm::reverse(chain))
      result = moveElementwise(rewriter, op, result);
    rewriter.replaceOp(outer, result);
    for (linalg::GenericOp op : chain)
      rewriter.eraseOp(op);
    return success();
  }
};

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
  patterns
      .add<NormalizeContraction, CancelTransposes,
           SinkLayout<shard::AllReduceOp>, SinkLayout<shard::ReduceScatterOp>,
           HoistLayoutThroughGather<tensor::CollapseShapeOp>,
           HoistLayoutThroughGather<linalg::TransposeOp>, DedupCollapseShape,
           DedupTranspose, SinkExpandThroughElementwise,
           HoistElementwiseThroughGather>(patterns.getContext());
  populateMergeGatheredMatmulPatterns(patterns);
  populateTokenContractionPatterns(patterns);
}

//===- Decompose.cpp - Split fused ops into tiles ------------*- C++ -*-===//
//
// overlap-decompose: applies each `overlap.plan`. A tile becomes one matmul
// and one tile-level collective on tensors; bufferization and stream
// scheduling work on what this produces.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"
#include "overlap/Dialect/Overlap/Transforms/Transforms.h"

#include "DecomposeRankMajor.h"
#include "PlannerBridge.h"
#include "TensorBuilders.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPDECOMPOSE
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

/// Builds the IR of one fused op's tiles at the op's position.
class TileBuilder {
public:
  TileBuilder(RewriterBase &rewriter, Location loc)
      : rewriter(rewriter), loc(loc) {}

  OpFoldResult idx(int64_t v) { return rewriter.getIndexAttr(v); }

  SmallVector<OpFoldResult> idxs(ArrayRef<int64_t> values) {
    return llvm::map_to_vector(values, [&](int64_t v) { return idx(v); });
  }

  Value slice(Value source, ArrayRef<int64_t> offsets,
              ArrayRef<int64_t> sizes) {
    SmallVector<int64_t> ones(offsets.size(), 1);
    return tensor::ExtractSliceOp::create(rewriter, loc, source, idxs(offsets),
                                          idxs(sizes), idxs(ones));
  }

  /// rows x cols -> blocks x (rows / blocks) x cols.
  Value splitRows(Value matrix, int64_t blocks) {
    auto type = cast<RankedTensorType>(matrix.getType());
    auto split = RankedTensorType::get(
        {blocks, type.getDimSize(0) / blocks, type.getDimSize(1)},
        type.getElementType());
    return tensor::ExpandShapeOp::create(rewriter, loc, split, matrix,
                                         {{0, 1}, {2}});
  }

  /// blocks x rows x cols -> (blocks * rows) x cols.
  Value joinRows(Value blocks) {
    return tensor::CollapseShapeOp::create(rewriter, loc, blocks,
                                           {{0, 1}, {2}});
  }

  Value expand(Value value, ArrayRef<int64_t> shape,
               ArrayRef<ReassociationIndices> groups) {
    auto type = RankedTensorType::get(
        shape, cast<RankedTensorType>(value.getType()).getElementType());
    return tensor::ExpandShapeOp::create(rewriter, loc, type, value, groups);
  }

  Value collapse(Value value, ArrayRef<ReassociationIndices> groups) {
    return tensor::CollapseShapeOp::create(rewriter, loc, value, groups);
  }

  /// A slice of `source` with its unit dimensions dropped (`shape`).
  Value reducedSlice(Value source, ArrayRef<int64_t> offsets,
                     ArrayRef<int64_t> sizes, ArrayRef<int64_t> shape) {
    SmallVector<int64_t> ones(offsets.size(), 1);
    auto type = RankedTensorType::get(
        shape, cast<RankedTensorType>(source.getType()).getElementType());
    return tensor::ExtractSliceOp::create(
        rewriter, loc, type, source, idxs(offsets), idxs(sizes), idxs(ones));
  }

  /// Rows [offset, offset + rows) of A (M x K). When A is X^T (a
  /// linalg.transpose of X, K x M: a weight gradient over the tokens), the
  /// transpose of X's columns instead, which overlap-fold-into-gemms reads
  /// in place (transpose_a): X is never transposed whole.
  Value rowsOfA(Value a, int64_t offset, int64_t rows) {
    int64_t k = cast<RankedTensorType>(a.getType()).getDimSize(1);
    if (Value x = transposedSource(a))
      return transposeTensor(rewriter, loc, slice(x, {0, offset}, {k, rows}),
                             {1, 0});
    return slice(a, {offset, 0}, {rows, k});
  }

  Value insert(Value value, Value dest, ArrayRef<int64_t> offsets,
               ArrayRef<int64_t> sizes) {
    SmallVector<int64_t> ones(offsets.size(), 1);
    return tensor::InsertSliceOp::create(
        rewriter, loc, value, dest, idxs(offsets), idxs(sizes), idxs(ones));
  }

  /// A contiguous copy of `value` (a collective call needs one buffer).
  Value pack(Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    return linalg::CopyOp::create(rewriter, loc, value,
                                  empty(type.getShape(), type.getElementType()))
        .getResult(0);
  }

  Value empty(ArrayRef<int64_t> shape, Type elementType) {
    return tensor::EmptyOp::create(rewriter, loc, shape, elementType);
  }

  /// C + A * B with A: G x m x K, B: K x N (the same for every block),
  /// C: G x m x N -- a strided-batched GEMM with a zero batch stride on B.
  Value batchedMatmul(Value a, Value b, Value c) {
    auto op = linalg::BatchMatmulOp::create(
        rewriter, loc, TypeRange{c.getType()}, ValueRange{a, b}, ValueRange{c});
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr batch, m, n, k;
    bindDims(ctx, batch, m, n, k);
    auto map = [&](ArrayRef<AffineExpr> results) {
      return AffineMapAttr::get(AffineMap::get(4, 0, results, ctx));
    };
    op->setAttr("indexing_maps",
                rewriter.getArrayAttr(
                    {map({batch, m, k}), map({k, n}), map({batch, m, n})}));
    return op.getResult(0);
  }

  /// `overlap.tiles` over `dest`, one slice per span: `slice(span)` gives
  /// its offsets and sizes, `work(span, slice)` builds the span's ops in the
  /// body on the slice's block argument and returns its new contents. One
  /// op rather than a chain of inserts into `dest`: bufferization then
  /// analyses each tile on its own (see TilesOp).
  Value tiles(Value dest, ArrayRef<planner::TileSpan> spans,
              function_ref<void(const planner::TileSpan &,
                                SmallVectorImpl<int64_t> &offsets,
                                SmallVectorImpl<int64_t> &sizes)>
                  slice,
              function_ref<Value(const planner::TileSpan &, Value)> work) {
    SmallVector<int64_t> offsets, sizes;
    for (const planner::TileSpan &span : spans)
      slice(span, offsets, sizes);
    auto op = TilesOp::create(rewriter, loc, dest, offsets, sizes);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(&op.getBodyBlock());
    SmallVector<Value> values;
    for (auto [span, arg] :
         llvm::zip_equal(spans, op.getBodyBlock().getArguments()))
      values.push_back(work(span, arg));
    YieldOp::create(rewriter, loc, values);
    return op.getResult();
  }

  /// A packed buffer of `shape` holding C's rows of one tile: a fill when
  /// C is a fill (no copy of a constant), otherwise a copy of the strided
  /// view `cView()` builds (only then).
  Value packedInit(Value c, function_ref<Value()> cView,
                   ArrayRef<int64_t> shape, Type elementType,
                   Value into = Value()) {
    // `into`: a slice of the buffer the product goes into, so that the
    // GEMM writes there in place (no buffer of its own and no copy).
    Value packed = into ? into : empty(shape, elementType);
    if (linalg::FillOp fill = fillThroughViews(c))
      return refill(fill, packed);
    return linalg::CopyOp::create(rewriter, loc, cView(), packed).getResult(0);
  }

  /// `slot` filled with `fill`'s value: a tile's own fill instead of one
  /// of the whole accumulator (which overlap-fold-into-gemms then drops
  /// when the tile's GEMM overwrites).
  Value refill(linalg::FillOp fill, Value slot) {
    return linalg::FillOp::create(rewriter, loc, fill.getInputs()[0], slot)
        .getResult(0);
  }

  /// The destination of tiles over C: C itself, or, when C is a fill
  /// (through views), an empty tensor of its type whose tiles are filled
  /// one by one (`fill` set).
  Value accumulatorDest(Value c, linalg::FillOp &fill) {
    fill = fillThroughViews(c);
    if (!fill)
      return c;
    auto type = cast<RankedTensorType>(c.getType());
    return empty(type.getShape(), type.getElementType());
  }

private:
  RewriterBase &rewriter;
  Location loc;
};

// Tile offsets and, for reduce-scatter and all-gather, the rows and offset
// of each tile within every rank's block come from the Planner's TileLayout
// (the rule overlap-bench runs too), never from arithmetic of their own.

} // namespace

/// Erases `v`'s defining ops while they are dead, down to a fill and the
/// empty tensors they wrote into: an accumulator fill that per-tile fills
/// replaced, and the views and transposes between it and C (overlap-raise's
/// for the (s, b) rows of a strided layout too). `v` is not used afterwards.
void mlir::overlap::eraseDeadChain(RewriterBase &rewriter, Value v) {
  Operation *def = v.getDefiningOp();
  while (
      def && def->use_empty() &&
      isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
          tensor::ExtractSliceOp, linalg::TransposeOp, linalg::FillOp>(def)) {
    // A transpose or fill writes into an init (an empty tensor) of its own;
    // a fill's operand 0 is its scalar, where the walk stops.
    bool dps = isa<linalg::TransposeOp, linalg::FillOp>(def);
    Operation *source = def->getOperand(0).getDefiningOp();
    Value init = dps ? def->getOperand(1) : Value();
    rewriter.eraseOp(def);
    if (auto empty =
            init ? init.getDefiningOp<tensor::EmptyOp>() : tensor::EmptyOp();
        empty && empty->use_empty())
      rewriter.eraseOp(empty);
    def = source;
  }
}

Value mlir::overlap::transposedSource(Value a) {
  auto transpose = a.getDefiningOp<linalg::TransposeOp>();
  if (!transpose || !transpose.hasPureTensorSemantics() ||
      transpose.getPermutation() != ArrayRef<int64_t>{1, 0} ||
      !cast<RankedTensorType>(transpose.getInput().getType()).hasStaticShape())
    return {};
  return transpose.getInput();
}

namespace {

void decomposeAllReduce(RewriterBase &rewriter, MatmulAllReduceOp op,
                        const planner::TileLayout &layout) {
  TileBuilder tb(rewriter, op.getLoc());
  int64_t n = op.getB().getType().getDimSize(1);
  RankedTensorType resultType = op.getResult().getType();
  // Each tile's rows of C are its slice: the matmul accumulates into them
  // and the all-reduce sums them in place. A rounded result (f32 C, f16 or
  // bf16 result) is its own tensor instead: each tile's f32 rows of
  // C + A*B are rounded into its slice, which the all-reduce sums.
  bool rounded =
      resultType.getElementType() != op.getC().getType().getElementType();
  linalg::FillOp fill;
  Value dest =
      rounded ? tb.empty(resultType.getShape(), resultType.getElementType())
              : tb.accumulatorDest(op.getC(), fill);
  Value result = tb.tiles(
      dest, layout.getSpans(),
      [&](const planner::TileSpan &tile, SmallVectorImpl<int64_t> &offsets,
          SmallVectorImpl<int64_t> &sizes) {
        offsets.append({tile.offset, 0});
        sizes.append({tile.rows, n});
      },
      [&](const planner::TileSpan &tile, Value slot) {
        Value a = tb.rowsOfA(op.getA(), tile.offset, tile.rows);
        Value c = rounded
                      ? tb.slice(op.getC(), {tile.offset, 0}, {tile.rows, n})
                  : fill ? tb.refill(fill, slot)
                         : slot;
        Value product = linalg::MatmulOp::create(
                            rewriter, op.getLoc(), TypeRange{c.getType()},
                            ValueRange{a, op.getB()}, ValueRange{c})
                            .getResult(0);
        if (rounded)
          product = convertElementsInto(rewriter, op.getLoc(), product, slot);
        return AllReduceOp::create(rewriter, op.getLoc(), slot.getType(),
                                   product, op.getGridAttr(),
                                   op.getGridAxesAttr(),
                                   ReductionKindAttr::get(rewriter.getContext(),
                                                          ReductionKind::Sum))
            .getResult();
      });
  Value a = op.getA(), c = op.getC();
  rewriter.replaceOp(op, result);
  eraseDeadChain(rewriter, c);
  eraseDeadChain(rewriter, a); // A as X^T: the tiles read X
}

/// One reduce-scatter tile's partial rows, packed G x q (q rows at `o` of
/// every rank's block), when A is X^T: a GEMM per block, each reading its q
/// columns of X in place. (A strided batch over the blocks would need them
/// as the batch of a transposed operand, which overlap_gemm's layout,
/// batch x k x m, does not express for columns of one matrix.)
Value packTransposedTile(RewriterBase &rewriter, TileBuilder &tb,
                         MatmulReduceScatterOp op, Value x, int64_t group,
                         int64_t blockRows, int64_t q, int64_t o) {
  Location loc = op.getLoc();
  RankedTensorType cType = op.getC().getType();
  Type elem = cType.getElementType();
  Type outElem = op.getResult().getType().getElementType();
  int64_t k = cast<RankedTensorType>(x.getType()).getDimSize(0);
  int64_t n = cType.getDimSize(1);
  linalg::FillOp fill = fillThroughViews(op.getC());
  Value packed = tb.empty({group, q, n}, outElem);
  for (int64_t g = 0; g < group; ++g) {
    int64_t row = g * blockRows + o;
    auto part = [&] {
      return tb.reducedSlice(packed, {g, 0, 0}, {1, q, n}, {q, n});
    };
    // Summed where it is sent unless it is rounded first.
    Value dest = outElem == elem ? part() : tb.empty({q, n}, elem);
    Value init = fill ? tb.refill(fill, dest)
                      : linalg::CopyOp::create(
                            rewriter, loc,
                            tb.slice(op.getC(), {row, 0}, {q, n}), dest)
                            .getResult(0);
    Value a = transposeTensor(rewriter, loc, tb.slice(x, {0, row}, {k, q}),
                              {1, 0});
    Value product =
        linalg::MatmulOp::create(rewriter, loc, TypeRange{init.getType()},
                                 ValueRange{a, op.getB()}, ValueRange{init})
            .getResult(0);
    if (outElem != elem)
      product = convertElementsInto(rewriter, loc, product, part());
    packed = tb.insert(product, packed, {g, 0, 0}, {1, q, n});
  }
  return tb.joinRows(packed);
}

void decomposeReduceScatter(RewriterBase &rewriter, MatmulReduceScatterOp op,
                            const planner::TileLayout &layout) {
  TileBuilder tb(rewriter, op.getLoc());
  RankedTensorType cType = op.getC().getType();
  Type elem = cType.getElementType();
  // The collective's type: C's, or the f16/bf16 each tile is rounded to.
  Type outElem = op.getResult().getType().getElementType();
  int64_t k = op.getA().getType().getDimSize(1);
  int64_t n = cType.getDimSize(1);
  int64_t group = layout.slots(), blockRows = layout.blockSize();
  // View every rank's block of rows as one batch entry (A as X^T: each
  // block's columns of X instead).
  Value x = transposedSource(op.getA());
  Value a3 = x ? Value() : tb.splitRows(op.getA(), group);
  Value c3; // C as blocks, built the first time a tile copies C's rows.
  // Each tile's rows of the result are its slice, which the collective
  // scatters into.
  Value out = tb.tiles(
      tb.empty({blockRows, n}, outElem), layout.getSpans(),
      [&](const planner::TileSpan &tile, SmallVectorImpl<int64_t> &offsets,
          SmallVectorImpl<int64_t> &sizes) {
        offsets.append({tile.blockOffset, 0});
        sizes.append({tile.blockRows, n});
      },
      [&](const planner::TileSpan &tile, Value slot) {
        int64_t q = tile.blockRows, o = tile.blockOffset;
        Value packed;
        if (x) {
          packed = packTransposedTile(rewriter, tb, op, x, group, blockRows,
                                      q, o);
        } else {
          Value a = tb.slice(a3, {0, o, 0}, {group, q, k});
          auto cView = [&]() {
            if (!c3)
              c3 = tb.splitRows(op.getC(), group);
            return tb.slice(c3, {0, o, 0}, {group, q, n});
          };
          Value init = tb.packedInit(op.getC(), cView, {group, q, n}, elem);
          packed = tb.joinRows(tb.batchedMatmul(a, op.getB(), init));
          if (outElem != elem)
            packed = convertElementsInto(rewriter, op.getLoc(), packed,
                                         tb.empty({group * q, n}, outElem));
        }
        return ReduceScatterOp::create(
                   rewriter, op.getLoc(), slot.getType(), packed, slot,
                   op.getGridAttr(), op.getGridAxesAttr(),
                   ReductionKindAttr::get(rewriter.getContext(),
                                          ReductionKind::Sum))
            .getResult();
      });
  Value a = op.getA(), c = op.getC();
  rewriter.replaceOp(op, out);
  // A fill accumulator was replaced by fills of the packed buffers.
  eraseDeadChain(rewriter, c);
  eraseDeadChain(rewriter, a);
}

} // namespace

/// The rounding of an all-gather + matmul's f32 result to the factors'
/// f16/bf16 that follows it (JAX's bf16 dot with f32 accumulation), when
/// the tiles can round instead: C a +0.0 fill, the rounding the result's
/// one user (through `reshape`, at most one). Each tile then writes the
/// rounded rows (the GEMM's epilogue, overlap-fold-into-gemms), and no f32
/// result or rounding pass is left.
linalg::GenericOp mlir::overlap::tileRounding(Value result, Value a, Value c,
                                             Operation *&reshape) {
  reshape = nullptr;
  Type ab = getElementTypeOrSelf(a.getType());
  if (ab.isF32() || !getElementTypeOrSelf(c.getType()).isF32() ||
      !isPositiveZero(c))
    return {};
  return roundingUser(result, ab, reshape);
}

/// Replaces `rounding` (after `reshape`, if any) by `rounded`, the rows
/// already rounded, reshaped as the rounding's input was.
void mlir::overlap::replaceRounding(RewriterBase &rewriter,
                                    linalg::GenericOp rounding,
                                    Operation *reshape, Value rounded) {
  rewriter.setInsertionPoint(rounding);
  rounded = reapplyReshape(rewriter, reshape, rounded,
                           rounding.getResult(0).getType());
  rewriter.replaceOp(rounding, rounded);
  if (reshape)
    rewriter.eraseOp(reshape);
}

namespace {

void decomposeAllGather(RewriterBase &rewriter, AllGatherMatmulOp op,
                        const planner::TileLayout &layout) {
  TileBuilder tb(rewriter, op.getLoc());
  RankedTensorType cType = op.getC().getType();
  int64_t k = op.getA().getType().getDimSize(1);
  int64_t n = cType.getDimSize(1);
  int64_t group = layout.slots();
  Operation *reshape = nullptr;
  linalg::GenericOp rounding =
      tileRounding(op.getResult(), op.getA(), op.getC(), reshape);
  Type outElem =
      rounding ? op.getA().getType().getElementType() : cType.getElementType();
  // Each tile's rows of every rank's block of C are its slice, where the
  // batched matmul accumulates in place (into its own fill of the slice
  // when C is a fill); rounded, the slices are of the rounded result and
  // each tile rounds its f32 rows into its slice.
  linalg::FillOp fill;
  Value dest = rounding ? tb.empty(cType.getShape(), outElem)
                        : tb.accumulatorDest(op.getC(), fill);
  if (rounding)
    fill = fillThroughViews(op.getC());
  Value acc = tb.tiles(
      tb.splitRows(dest, group), layout.getSpans(),
      [&](const planner::TileSpan &tile, SmallVectorImpl<int64_t> &offsets,
          SmallVectorImpl<int64_t> &sizes) {
        offsets.append({0, tile.blockOffset, 0});
        sizes.append({group, tile.blockRows, n});
      },
      [&](const planner::TileSpan &tile, Value c) {
        int64_t q = tile.blockRows, o = tile.blockOffset;
        Value local = tb.slice(op.getA(), {o, 0}, {q, k});
        auto gatheredType = RankedTensorType::get(
            {group * q, k}, op.getA().getType().getElementType());
        Value gathered =
            AllGatherOp::create(rewriter, op.getLoc(), gatheredType, local,
                                /*init=*/Value(), op.getGridAttr(),
                                op.getGridAxesAttr())
                .getResult();
        Value init = rounding
                         ? tb.refill(fill, tb.empty({group, q, n},
                                                    cType.getElementType()))
                     : fill ? tb.refill(fill, c)
                            : c;
        Value product =
            tb.batchedMatmul(tb.splitRows(gathered, group), op.getB(), init);
        return rounding ? convertElementsInto(rewriter, op.getLoc(), product, c)
                        : product;
      });
  Value c = op.getC();
  if (rounding) {
    replaceRounding(rewriter, rounding, reshape, tb.joinRows(acc));
    rewriter.eraseOp(op);
  } else {
    rewriter.replaceOp(op, tb.joinRows(acc));
  }
  eraseDeadChain(rewriter, c);
}

// Sequence parallelism on [b, s, k] with b > 1 (StridedRows): the fused
// op's rows are (s, b) pairs of transposed copies of A and C. Here a tile
// takes q tokens at offset o of every rank's block of s for every b, and
// its GEMMs read them where they lie: one strided-batched GEMM over the G
// ranks per b, rows contiguous. What the collective moves is laid out
// b-major, so the result comes out in [b, s, N] too, and neither A, C nor
// the result is transposed.

/// Whether every tile of `layout` takes whole groups of b rows.
bool takesWholeGroups(const planner::TileLayout &layout, int64_t b) {
  return llvm::all_of(layout.getSpans(), [&](const planner::TileSpan &t) {
    return t.blockRows % b == 0 && t.blockOffset % b == 0;
  });
}

/// Replaces the transpose back to [b, rows, N] by `result` and drops the
/// op and what only fed it.
void replaceStrided(RewriterBase &rewriter, Operation *op, StridedRows sr,
                    Value result) {
  Value a = op->getOperand(0), c = op->getOperand(2);
  Value backInit = sr.back.getInit();
  // No result: the transpose back has no user left (its user was replaced).
  if (result)
    rewriter.replaceOp(sr.back, result);
  else
    rewriter.eraseOp(sr.back);
  rewriter.eraseOp(sr.expand);
  rewriter.eraseOp(op);
  if (auto empty = backInit.getDefiningOp<tensor::EmptyOp>();
      empty && empty->use_empty())
    rewriter.eraseOp(empty);
  eraseDeadChain(rewriter, a);
  if (c != a)
    eraseDeadChain(rewriter, c);
}

void decomposeStridedReduceScatter(RewriterBase &rewriter,
                                   MatmulReduceScatterOp op,
                                   const planner::TileLayout &layout,
                                   const StridedRows &sr) {
  TileBuilder tb(rewriter, op.getLoc());
  Location loc = op.getLoc();
  Type elem = op.getC().getType().getElementType();
  Type outElem = op.getResult().getType().getElementType();
  auto xType = cast<RankedTensorType>(sr.x.getType());
  const int64_t b = sr.b, s = xType.getDimSize(1), k = xType.getDimSize(2);
  const int64_t n = op.getB().getType().getDimSize(1);
  const int64_t group = layout.slots(), perRank = s / group;
  linalg::FillOp fill = fillThroughViews(op.getC());
  Value x4 = tb.expand(sr.x, {b, group, perRank, k}, {{0}, {1, 2}, {3}});
  Value y4 = sr.y ? tb.expand(sr.y, {b, group, perRank, n}, {{0}, {1, 2}, {3}})
                  : Value();
  Value out = tb.tiles(
      tb.empty({b, perRank, n}, outElem), layout.getSpans(),
      [&](const planner::TileSpan &tile, SmallVectorImpl<int64_t> &offsets,
          SmallVectorImpl<int64_t> &sizes) {
        offsets.append({0, tile.blockOffset / b, 0});
        sizes.append({b, tile.blockRows / b, n});
      },
      [&](const planner::TileSpan &tile, Value slot) {
        const int64_t q = tile.blockRows / b, o = tile.blockOffset / b;
        // G x b x q x N: block g goes to rank g, b-major within it.
        Value packed = tb.empty({group, b, q, n}, outElem);
        for (int64_t j = 0; j < b; ++j) {
          auto part = [&] {
            return tb.reducedSlice(packed, {0, j, 0, 0}, {group, 1, q, n},
                                   {group, q, n});
          };
          Value a = tb.reducedSlice(x4, {j, 0, o, 0}, {1, group, q, k},
                                    {group, q, k});
          // Summed where it is sent unless it is rounded first.
          Value dest = outElem == elem ? part() : tb.empty({group, q, n}, elem);
          Value init =
              fill ? tb.refill(fill, dest)
                   : linalg::CopyOp::create(rewriter, loc,
                                            tb.reducedSlice(y4, {j, 0, o, 0},
                                                            {1, group, q, n},
                                                            {group, q, n}),
                                            dest)
                         .getResult(0);
          Value product = tb.batchedMatmul(a, op.getB(), init);
          if (outElem != elem)
            product = convertElementsInto(rewriter, loc, product, part());
          packed = tb.insert(product, packed, {0, j, 0, 0}, {group, 1, q, n});
        }
        Value flat = tb.collapse(packed, {{0, 1, 2}, {3}});
        auto type = RankedTensorType::get({b * q, n}, outElem);
        // A slot of all of every block is contiguous: scattered into it;
        // otherwise into a buffer that the tile's result unpacks.
        bool whole = q == perRank;
        Value into = whole ? tb.collapse(slot, {{0, 1}, {2}}) : Value();
        Value scattered = ReduceScatterOp::create(
                              rewriter, loc, type, flat, into, op.getGridAttr(),
                              op.getGridAxesAttr(),
                              ReductionKindAttr::get(rewriter.getContext(),
                                                     ReductionKind::Sum))
                              .getResult();
        return tb.expand(scattered, {b, q, n}, {{0, 1}, {2}});
      });
  replaceStrided(rewriter, op, sr, out);
}

void decomposeStridedAllGather(RewriterBase &rewriter, AllGatherMatmulOp op,
                               const planner::TileLayout &layout,
                               const StridedRows &sr) {
  TileBuilder tb(rewriter, op.getLoc());
  Location loc = op.getLoc();
  auto xType = cast<RankedTensorType>(sr.x.getType());
  const int64_t b = sr.b, perRank = xType.getDimSize(1),
                k = xType.getDimSize(2);
  const int64_t n = op.getB().getType().getDimSize(1);
  const int64_t group = layout.slots(), s = perRank * group;
  Type elem = op.getC().getType().getElementType();
  linalg::FillOp fill = fillThroughViews(op.getC());
  // Rounded to the factors' type after the transpose back: the tiles round.
  Operation *reshape = nullptr;
  linalg::GenericOp rounding =
      sr.y ? linalg::GenericOp()
           : tileRounding(sr.back->getResult(0), op.getA(), op.getC(), reshape);
  Value dest = sr.y       ? sr.y
               : rounding ? tb.empty({b, s, n}, xType.getElementType())
                          : tb.empty({b, s, n}, elem);
  Value acc = tb.tiles(
      tb.expand(dest, {b, group, perRank, n}, {{0}, {1, 2}, {3}}),
      layout.getSpans(),
      [&](const planner::TileSpan &tile, SmallVectorImpl<int64_t> &offsets,
          SmallVectorImpl<int64_t> &sizes) {
        offsets.append({0, 0, tile.blockOffset / b, 0});
        sizes.append({b, group, tile.blockRows / b, n});
      },
      [&](const planner::TileSpan &tile, Value slot) {
        const int64_t q = tile.blockRows / b, o = tile.blockOffset / b;
        // This rank's q tokens of every b, packed unless they are all of
        // its rows.
        Value local =
            q == perRank ? sr.x : tb.pack(tb.slice(sr.x, {0, o, 0}, {b, q, k}));
        auto gatheredType =
            RankedTensorType::get({group * b * q, k}, xType.getElementType());
        Value gathered = AllGatherOp::create(rewriter, loc, gatheredType,
                                             tb.collapse(local, {{0, 1}, {2}}),
                                             /*init=*/Value(), op.getGridAttr(),
                                             op.getGridAxesAttr())
                             .getResult();
        Value g4 = tb.expand(gathered, {group, b, q, k}, {{0, 1, 2}, {3}});
        for (int64_t j = 0; j < b; ++j) {
          Value a = tb.reducedSlice(g4, {0, j, 0, 0}, {group, 1, q, k},
                                    {group, q, k});
          Value c = tb.reducedSlice(slot, {j, 0, 0, 0}, {1, group, q, n},
                                    {group, q, n});
          Value product;
          if (rounding) {
            product = convertElementsInto(
                rewriter, loc,
                tb.batchedMatmul(
                    a, op.getB(),
                    tb.refill(fill, tb.empty({group, q, n}, elem))),
                c);
          } else {
            product =
                tb.batchedMatmul(a, op.getB(), fill ? tb.refill(fill, c) : c);
          }
          slot = tb.insert(product, slot, {j, 0, 0, 0}, {1, group, q, n});
        }
        return slot;
      });
  Value result = tb.collapse(acc, {{0}, {1, 2}, {3}});
  if (rounding) {
    // The rounding takes the transpose back's place: the back transpose
    // then has no user, and replaceStrided drops it with the op.
    replaceRounding(rewriter, rounding, reshape, result);
    replaceStrided(rewriter, op, sr, Value());
    return;
  }
  replaceStrided(rewriter, op, sr, result);
}

// Expert parallelism. G ranks, E experts per rank, Cap tokens per (rank,
// expert) block (the layout's block size, its slots being G x E). Tile
// (q, o) takes tokens o .. o+q of every block: one all-to-all of G x E
// blocks of q tokens, and per expert one strided-batched GEMM over the G
// ranks' q tokens. The rank-2 form is the rank-3 one with E = 1.

/// The sizes both all-to-all ops tile by: E experts per rank (1 in the
/// rank-2 form), Cap tokens per block, K and N.
struct ExpertDims {
  ExpertDims(Operation *op, const planner::TileLayout &layout)
      : one(cast<RankedTensorType>(op->getOperand(0).getType()).getRank() == 2),
        e(getExpertsPerRank(op)), cap(layout.blockSize()),
        k(cast<RankedTensorType>(op->getOperand(0).getType())
              .getShape()
              .back()),
        n(cast<RankedTensorType>(op->getOperand(1).getType())
              .getShape()
              .back()) {}

  /// An expert-major E x (G Cap) x W tensor (rank 2: (G Cap) x W) as
  /// E x G x Cap x W.
  SmallVector<ReassociationIndices> expertMajorGroups() const {
    if (one)
      return {{0, 1, 2}, {3}};
    return {{0}, {1, 2}, {3}};
  }

  /// Expert x's weight, K x N.
  Value weight(TileBuilder &tb, Value b, int64_t x) const {
    return one ? b : tb.reducedSlice(b, {x, 0, 0}, {1, k, n}, {k, n});
  }

  bool one;
  int64_t e, cap, k, n;
};

/// One tile's exchange of `send` over the fused op's group.
Value exchange(RewriterBase &rewriter, Operation *op, Value send) {
  return AllToAllOp::create(rewriter, op->getLoc(), send.getType(), send,
                            /*init=*/Value(),
                            op->getAttrOfType<FlatSymbolRefAttr>("grid"),
                            op->getAttrOfType<DenseI16ArrayAttr>("grid_axes"))
      .getResult();
}

/// Dispatch: A is (G E) x Cap x K (rank 2: (G Cap) x K), C is E x (G Cap)
/// x N (rank 2: (G Cap) x N). The tiles' tokens are packed (all before
/// the tiles), each tile's exchanged, and each expert's GEMM accumulates
/// into its rows of C in place.
void decomposeDispatch(RewriterBase &rewriter, AllToAllMatmulOp op,
                       const planner::TileLayout &layout, int64_t group) {
  TileBuilder tb(rewriter, op.getLoc());
  const ExpertDims d(op, layout);
  const int64_t e = d.e, cap = d.cap, k = d.k, n = d.n;
  Value a3 =
      d.one ? tb.expand(op.getA(), {group, cap, k}, {{0, 1}, {2}}) : op.getA();
  SmallVector<ReassociationIndices> cGroups = d.expertMajorGroups();
  linalg::FillOp fill;
  Value c4 = tb.expand(tb.accumulatorDest(op.getC(), fill), {e, group, cap, n},
                       cGroups);
  // Every tile's tokens are packed before any tile's GEMMs: the compute
  // stream runs the packs first, so exchange t + 1 can start while the
  // experts compute tile t (packed per tile, the pack of t + 1 would wait
  // behind the GEMMs of t, and nothing would overlap).
  SmallVector<Value> sends;
  for (const planner::TileSpan &tile : layout.getSpans())
    sends.push_back(tb.pack(tb.slice(a3, {0, tile.blockOffset, 0},
                                     {group * e, tile.blockRows, k})));
  size_t next = 0;
  Value acc = tb.tiles(
      c4, layout.getSpans(),
      [&](const planner::TileSpan &tile, SmallVectorImpl<int64_t> &offsets,
          SmallVectorImpl<int64_t> &sizes) {
        offsets.append({0, 0, tile.blockOffset, 0});
        sizes.append({e, group, tile.blockRows, n});
      },
      [&](const planner::TileSpan &tile, Value cTile) {
        int64_t q = tile.blockRows;
        Value send = sends[next++];
        Value recv = exchange(rewriter, op, send);
        // Block j of what arrived is rank j's tokens for this rank's E
        // experts.
        Value recv4 = tb.expand(recv, {group, e, q, k}, {{0, 1}, {2}, {3}});
        for (int64_t x = 0; x < e; ++x) {
          Value ax = tb.reducedSlice(recv4, {0, x, 0, 0}, {group, 1, q, k},
                                     {group, q, k});
          Value bx = d.weight(tb, op.getB(), x);
          Value cx = tb.reducedSlice(cTile, {x, 0, 0, 0}, {1, group, q, n},
                                     {group, q, n});
          if (fill)
            cx = tb.refill(fill, cx);
          cTile = tb.insert(tb.batchedMatmul(ax, bx, cx), cTile, {x, 0, 0, 0},
                            {1, group, q, n});
        }
        return cTile;
      });
  Value c = op.getC();
  rewriter.replaceOp(op, tb.collapse(acc, cGroups));
  eraseDeadChain(rewriter, c);
}

/// Combine: A is E x (G Cap) x K, C is E x (G Cap) x N (rank 2: (G Cap) x
/// K and N), the result (G E) x Cap x N (rank 2: (G Cap) x N). Each
/// expert's GEMM fills its blocks of a packed send buffer; the exchange
/// delivers the tile's rows of the result.
void decomposeCombine(RewriterBase &rewriter, MatmulAllToAllOp op,
                      const planner::TileLayout &layout, int64_t group) {
  TileBuilder tb(rewriter, op.getLoc());
  const ExpertDims d(op, layout);
  const bool one = d.one;
  const int64_t e = d.e, cap = d.cap, k = d.k, n = d.n;
  Type elem = op.getC().getType().getElementType();
  SmallVector<ReassociationIndices> groups4 = d.expertMajorGroups();
  Value a4 = tb.expand(op.getA(), {e, group, cap, k}, groups4);
  Value c4; // C as blocks, built the first time a tile copies C's rows.
  Value out = tb.tiles(
      tb.empty({group * e, cap, n}, elem), layout.getSpans(),
      [&](const planner::TileSpan &tile, SmallVectorImpl<int64_t> &offsets,
          SmallVectorImpl<int64_t> &sizes) {
        offsets.append({0, tile.blockOffset, 0});
        sizes.append({group * e, tile.blockRows, n});
      },
      [&](const planner::TileSpan &tile, Value) {
        int64_t q = tile.blockRows, o = tile.blockOffset;
        Value packed; // G x E x q x N: block j goes back to rank j.
        for (int64_t x = 0; x < e; ++x) {
          Value ax = tb.reducedSlice(a4, {x, 0, o, 0}, {1, group, q, k},
                                     {group, q, k});
          Value bx = d.weight(tb, op.getB(), x);
          auto cView = [&]() {
            if (!c4)
              c4 = tb.expand(op.getC(), {e, group, cap, n}, groups4);
            return tb.reducedSlice(c4, {x, 0, o, 0}, {1, group, q, n},
                                   {group, q, n});
          };
          // Expert x's blocks of the packed send buffer (E > 1): its GEMM
          // writes them in place.
          if (!one && !packed)
            packed = tb.empty({group, e, q, n}, elem);
          Value slot = one ? Value()
                           : tb.reducedSlice(packed, {0, x, 0, 0},
                                             {group, 1, q, n}, {group, q, n});
          Value init =
              tb.packedInit(op.getC(), cView, {group, q, n}, elem, slot);
          Value product = tb.batchedMatmul(ax, bx, init);
          if (one) {
            packed = product;
            break;
          }
          packed = tb.insert(product, packed, {0, x, 0, 0}, {group, 1, q, n});
        }
        if (!one)
          packed = tb.collapse(packed, {{0, 1}, {2}, {3}});
        // What arrives is this rank's tokens back from every rank's
        // experts: the tile's rows of the result.
        return exchange(rewriter, op, packed);
      });
  Value c = op.getC();
  rewriter.replaceOp(op, one ? tb.collapse(out, {{0, 1}, {2}}) : out);
  eraseDeadChain(rewriter, c);
}

enum class Decomposed { Yes, Skipped, Failed };

/// Decomposes the fused op `op` along its plan (a '#overlap.plan' and
/// static shapes and group size needed): Yes; Skipped (with `remark`, a
/// remark says why) when it has no plan or a dynamic shape or group;
/// Failed (with an error) when the plan does not fit it.
Decomposed decomposeFusedOp(RewriterBase &rewriter, Operation *op,
                            SymbolTableCollection &symbols, bool remark) {
  auto skipped = [&](const std::string &why) {
    if (remark)
      remarkMissed(op, "not-decomposed", "overlap-decompose",
                   "not decomposed: " + why);
    return Decomposed::Skipped;
  };
  auto plan = op->getAttrOfType<PlanAttr>(OverlapDialect::getPlanAttrName());
  if (!plan)
    return skipped("no '" + OverlapDialect::getPlanAttrName().str() +
                   "' attribute (run overlap-plan first)");
  if (std::string dynamic = dynamicShapeOf(op); !dynamic.empty())
    return skipped(dynamic + "; tiles need static shapes");
  // Reduce-scatter and all-gather address every rank's block of rows; the
  // all-reduce layout does not depend on the group.
  int64_t group = 1;
  if (!isa<MatmulAllReduceOp>(op)) {
    group = groupSizeOf(op, symbols);
    if (ShapedType::isDynamic(group))
      return skipped("the group size of " + remarkText(op->getAttr("grid")) +
                     " is not static");
  }
  if (plan.isRankMajor()) {
    FailureOr<planner::RankMajorLayout> layout =
        rankMajorLayoutOf(op, plan, group);
    if (failed(layout))
      return Decomposed::Failed;
    rewriter.setInsertionPoint(op);
    LogicalResult built =
        isa<MatmulReduceScatterOp>(op)
            ? decomposeRankMajorReduceScatter(
                  rewriter, cast<MatmulReduceScatterOp>(op), *layout,
                  plan.getGroups())
            : decomposeRankMajorAllGather(rewriter,
                                          cast<AllGatherMatmulOp>(op),
                                          *layout, plan.getGroups());
    return succeeded(built) ? Decomposed::Yes : Decomposed::Failed;
  }
  // All-to-all tiles take a share of every (rank, expert) block; the
  // layout's slots are those blocks.
  FailureOr<planner::TileLayout> layout = tileLayoutOf(op, plan, group);
  if (failed(layout))
    return Decomposed::Failed;
  rewriter.setInsertionPoint(op);
  // [b, s, k] rows: b-major tiles in place when every tile takes whole
  // groups of b rows (the Planner's rowGroup makes it so).
  if (std::optional<StridedRows> sr = stridedRowsOf(op);
      sr && takesWholeGroups(*layout, sr->b)) {
    rewriter.setInsertionPoint(sr->back);
    if (auto rs = dyn_cast<MatmulReduceScatterOp>(op))
      decomposeStridedReduceScatter(rewriter, rs, *layout, *sr);
    else
      decomposeStridedAllGather(rewriter, cast<AllGatherMatmulOp>(op), *layout,
                                *sr);
    return Decomposed::Yes;
  }
  if (auto ar = dyn_cast<MatmulAllReduceOp>(op))
    decomposeAllReduce(rewriter, ar, *layout);
  else if (auto rs = dyn_cast<MatmulReduceScatterOp>(op))
    decomposeReduceScatter(rewriter, rs, *layout);
  else if (auto ag = dyn_cast<AllGatherMatmulOp>(op))
    decomposeAllGather(rewriter, ag, *layout);
  else if (auto dispatch = dyn_cast<AllToAllMatmulOp>(op))
    decomposeDispatch(rewriter, dispatch, *layout, group);
  else
    decomposeCombine(rewriter, cast<MatmulAllToAllOp>(op), *layout, group);
  return Decomposed::Yes;
}

/// A fused op with a plan becomes its tiles (Transforms.h).
struct DecomposeFused : RewritePattern {
  explicit DecomposeFused(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isFusedMatmul(op))
      return failure();
    SymbolTableCollection symbols;
    return success(decomposeFusedOp(rewriter, op, symbols,
                                    /*remark=*/false) == Decomposed::Yes);
  }
};

struct OverlapDecomposePass
    : public mlir::overlap::impl::OverlapDecomposeBase<OverlapDecomposePass> {
  void runOnOperation() override {
    SmallVector<Operation *> fused;
    getOperation().walk([&](Operation *op) {
      if (isFusedMatmul(op))
        fused.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    SymbolTableCollection symbols;
    for (Operation *op : fused)
      if (decomposeFusedOp(rewriter, op, symbols, /*remark=*/true) ==
          Decomposed::Failed)
        signalPassFailure();
  }
};

} // namespace

void mlir::overlap::populateOverlapDecomposePatterns(
    RewritePatternSet &patterns) {
  patterns.add<DecomposeFused>(patterns.getContext());
}

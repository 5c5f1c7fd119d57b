//===- DecomposeRankMajor.cpp - Rank-major tiles of RS and AG --*- C++ -*-===//
//
// Part of overlap-decompose: a reduce-scatter or all-gather matmul whose plan
// has `layout = "rank-major"`. Every tile is one chunk of one rank's block of
// rows: one contiguous GEMM and one point-to-point exchange
// (`overlap.shift`), where the interleaved layout (Decompose.cpp) takes a
// share of every block and runs a strided-batched GEMM padded per rank. The
// order of the steps and the chunk cut are the Planner's rule
// (planner::RankMajorLayout); this file only builds the IR.
//
//===----------------------------------------------------------------------===//

#include "DecomposeRankMajor.h"

#include "TensorBuilders.h"

#include <optional>

#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::overlap;

namespace {

/// Builds one rank-major fused op's IR at the op's position.
class RankMajorBuilder {
public:
  RankMajorBuilder(RewriterBase &rewriter, Operation *op,
                   const planner::RankMajorLayout &layout,
                   SmallVector<bool> withNext)
      : b(rewriter), op(op), loc(op->getLoc()), layout(layout),
        withNext(std::move(withNext)) {}

  /// This rank's index in the op's group (row-major over its grid axes).
  LogicalResult init() {
    auto gridAttr = op->getAttrOfType<FlatSymbolRefAttr>("grid");
    auto grid =
        SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, gridAttr);
    if (!grid)
      return op->emitOpError() << "has no grid " << gridAttr;
    auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
    rank = groupRankOf(b, loc, grid, axes.asArrayRef());
    return success();
  }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  /// (rank + shift) mod G: the block this rank handles on a step.
  Value blockOf(int64_t shift) {
    int64_t group = layout.groupSize();
    shift = ((shift % group) + group) % group;
    if (shift == 0)
      return rank;
    Value sum = arith::AddIOp::create(b, loc, rank, index(shift));
    return arith::RemUIOp::create(b, loc, sum, index(group));
  }

  /// First row of the full product of tile t as this rank computes it
  /// (RankMajorLayout::globalRow, at run time).
  Value rowOf(size_t t) {
    const planner::RankMajorTile &tile = layout[t];
    Value start = arith::MulIOp::create(b, loc, blockOf(tile.step),
                                        index(layout.blockSize()));
    return tile.chunkOffset
               ? arith::AddIOp::create(b, loc, start, index(tile.chunkOffset))
                     .getResult()
               : start;
  }

  /// `rows` rows of the matrix `source` from row `row`.
  Value rowsAt(Value source, OpFoldResult row, int64_t rows) {
    auto type = cast<RankedTensorType>(source.getType());
    SmallVector<OpFoldResult> offsets = {row, b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(rows),
                                       b.getIndexAttr(type.getDimSize(1))};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes,
                                          strides);
  }

  /// `rows` rows of A from row `row`; when A is X^T, the transpose of
  /// X's columns there (read in place by the GEMM's transpose flag).
  Value rowsOfA(Value a, OpFoldResult row, int64_t rows) {
    Value x = transposedSource(a);
    if (!x)
      return rowsAt(a, row, rows);
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), row};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(type.getDimSize(0)),
                                       b.getIndexAttr(rows)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    Value columns = tensor::ExtractSliceOp::create(b, loc, x, offsets, sizes,
                                                   strides);
    return transposeTensor(b, loc, columns, {1, 0});
  }

  Value empty(ArrayRef<int64_t> shape, Type elementType) {
    return tensor::EmptyOp::create(b, loc, shape, elementType);
  }

  /// `into` holding the accumulator's rows at `row`: its own fill when C
  /// is a fill, otherwise a copy of C's rows.
  Value initRows(Value c, linalg::FillOp fill, Value row, Value into) {
    if (fill)
      return linalg::FillOp::create(b, loc, fill.getInputs()[0], into)
          .getResult(0);
    int64_t rows = cast<RankedTensorType>(into.getType()).getDimSize(0);
    return linalg::CopyOp::create(b, loc, rowsAt(c, row, rows), into)
        .getResult(0);
  }

  Value matmul(Value a, Value bMatrix, Value c) {
    return linalg::MatmulOp::create(b, loc, TypeRange{c.getType()},
                                    ValueRange{a, bMatrix}, ValueRange{c})
        .getResult(0);
  }

  /// Tile t's exchange of `value` into `into`.
  Value shift(size_t t, Value value, Value into) {
    auto shift = ShiftOp::create(
        b, loc, into.getType(), value, into,
        op->getAttrOfType<FlatSymbolRefAttr>("grid"),
        op->getAttrOfType<DenseI16ArrayAttr>("grid_axes"),
        b.getI64IntegerAttr(layout.shift(t)));
    if (withNext[t])
      shift.setWithNext(true);
    return shift.getResult();
  }

  RewriterBase &b;
  Operation *op;
  Location loc;
  const planner::RankMajorLayout &layout;
  SmallVector<bool> withNext;
  Value rank;
};

/// rows x cols <-> 1 x rows x cols.
Value dropUnitRows(OpBuilder &b, Location loc, Value v) {
  return tensor::CollapseShapeOp::create(b, loc, v, {{0, 1}, {2}});
}
Value addUnitRows(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  auto unit = RankedTensorType::get({1, type.getDimSize(0), type.getDimSize(1)},
                                    type.getElementType());
  return tensor::ExpandShapeOp::create(b, loc, unit, v, {{0, 1}, {2}});
}

/// The sum of `parts` (each `rows x N` of `elem`) in their order, in f32
/// from +0.0 and rounded once to `elem`: what the runtime's reduce-scatter
/// computes over the group's ranks in rank order (host backend), so that
/// the rank-major tiles are bit-identical to the unsplit op.
Value sumInOrder(OpBuilder &b, Location loc, ArrayRef<Value> parts, Value out) {
  auto type = cast<RankedTensorType>(out.getType());
  Type elem = type.getElementType();
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps(parts.size() + 1,
                              AffineMap::getMultiDimIdentityMap(2, ctx));
  SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, parts, ValueRange{out}, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Type f32 = nb.getF32Type();
        Value acc = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0));
        for (Value part : args.drop_back()) {
          Value wide =
              elem.isF32() ? part : arith::ExtFOp::create(nb, nl, f32, part);
          acc = arith::AddFOp::create(nb, nl, acc, wide);
        }
        Value result =
            elem.isF32() ? acc : arith::TruncFOp::create(nb, nl, elem, acc);
        linalg::YieldOp::create(nb, nl, result);
      });
  return generic.getResult(0);
}

/// For each tile of `layout`, whether its shift is fused with the next
/// (`with_next`): every exchanged tile of a group of `groups` (units per
/// group, in order; empty: one each) but the group's last exchanged one.
SmallVector<bool> fusedWithNext(const planner::RankMajorLayout &layout,
                                ArrayRef<int64_t> groups) {
  SmallVector<bool> withNext(layout.size(), false);
  size_t t = 0;
  for (int64_t units : groups) {
    // The group's exchanged tiles, in order: all but the last join the next.
    std::optional<size_t> previous;
    for (int64_t u = 0; u < units && t < layout.size(); ++u, ++t)
      if (layout.exchanges(t)) {
        if (previous)
          withNext[*previous] = true;
        previous = t;
      }
  }
  return withNext;
}

} // namespace

LogicalResult mlir::overlap::decomposeRankMajorReduceScatter(
    RewriterBase &rewriter, MatmulReduceScatterOp op,
    const planner::RankMajorLayout &layout, ArrayRef<int64_t> groups) {
  RankMajorBuilder rb(rewriter, op, layout, fusedWithNext(layout, groups));
  if (failed(rb.init()))
    return failure();
  Location loc = op.getLoc();
  RankedTensorType cType = op.getC().getType();
  Type elem = cType.getElementType();
  Type outElem = op.getResult().getType().getElementType();
  int64_t n = cType.getDimSize(1), group = layout.groupSize();
  int64_t blockRows = layout.blockSize();
  linalg::FillOp fill = fillThroughViews(op.getC());
  // Slot s of the staging buffer holds the partial received on step s
  // (step 0: this rank's own); every tile writes one chunk of one slot.
  Value staging = rb.empty({group, blockRows, n}, outElem);
  SmallVector<int64_t> offsets, sizes;
  for (const planner::RankMajorTile &tile : layout.getTiles()) {
    offsets.append({tile.step, tile.chunkOffset, 0});
    sizes.append({1, tile.rows, n});
  }
  auto tiles = TilesOp::create(rewriter, loc, staging, offsets, sizes);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(&tiles.getBodyBlock());
    SmallVector<Value> values;
    for (auto [t, slot] :
         llvm::enumerate(tiles.getBodyBlock().getArguments())) {
      int64_t step = layout[t].step, rows = layout[t].rows;
      // Step s computes the partial of block (r + s) mod G and sends it to
      // its owner, rank (r + s) mod G, which receives it on its step s.
      Value row = rb.rowOf(t);
      Value into = dropUnitRows(rewriter, loc, slot);
      bool direct = step == 0 && outElem == elem;
      Value acc = rb.initRows(op.getC(), fill, row,
                              direct ? into : rb.empty({rows, n}, elem));
      Value partial =
          rb.matmul(rb.rowsOfA(op.getA(), row, rows), op.getB(), acc);
      if (outElem != elem)
        partial = convertElementsInto(rewriter, loc, partial,
                                      step == 0 ? into
                                                : rb.empty({rows, n}, outElem));
      if (layout.exchanges(t))
        partial = rb.shift(t, partial, into);
      values.push_back(addUnitRows(rewriter, loc, partial));
    }
    YieldOp::create(rewriter, loc, values);
  }
  // Rank r's rows: the G partials summed in the order of the ranks that
  // computed them (rank q's arrived on step (r - q) mod G).
  SmallVector<Value> parts;
  for (int64_t q = 0; q < group; ++q) {
    Value slotIndex = rb.blockOf(group - q);
    auto partType = RankedTensorType::get({blockRows, n}, outElem);
    SmallVector<OpFoldResult> sliceOffsets = {
        slotIndex, rewriter.getIndexAttr(0), rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> sliceSizes = {rewriter.getIndexAttr(1),
                                            rewriter.getIndexAttr(blockRows),
                                            rewriter.getIndexAttr(n)};
    SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
    parts.push_back(tensor::ExtractSliceOp::create(
        rewriter, loc, partType, tiles.getResult(), sliceOffsets, sliceSizes,
        strides));
  }
  Value result =
      sumInOrder(rewriter, loc, parts, rb.empty({blockRows, n}, outElem));
  Value a = op.getA(), c = op.getC();
  rewriter.replaceOp(op, result);
  eraseDeadChain(rewriter, c);
  eraseDeadChain(rewriter, a);
  return success();
}

LogicalResult mlir::overlap::decomposeRankMajorAllGather(
    RewriterBase &rewriter, AllGatherMatmulOp op,
    const planner::RankMajorLayout &layout, ArrayRef<int64_t> groups) {
  RankMajorBuilder rb(rewriter, op, layout, fusedWithNext(layout, groups));
  if (failed(rb.init()))
    return failure();
  Location loc = op.getLoc();
  RankedTensorType cType = op.getC().getType();
  int64_t k = op.getA().getType().getDimSize(1);
  int64_t n = cType.getDimSize(1), group = layout.groupSize();
  Operation *reshape = nullptr;
  linalg::GenericOp rounding =
      tileRounding(op.getResult(), op.getA(), op.getC(), reshape);
  Type outElem =
      rounding ? op.getA().getType().getElementType() : cType.getElementType();
  // The accumulator: C, or (C a fill, or the result rounded) a tensor
  // whose chunks are filled one by one.
  linalg::FillOp fill = fillThroughViews(op.getC());
  Value dest =
      (rounding || fill) ? rb.empty(cType.getShape(), outElem) : op.getC();
  Type aElem = op.getA().getType().getElementType();
  // Each tile's rows of C are a slice of one overlap.tiles (not a chain of
  // inserts, whose bufferization analysis grows with the cube of the
  // tiles); their first row depends on the rank, so the offsets are values.
  SmallVector<OpFoldResult> offsets;
  SmallVector<int64_t> sizes;
  for (size_t t = 0; t < layout.size(); ++t) {
    offsets.append({rb.rowOf(t), rewriter.getIndexAttr(0)});
    sizes.append({layout[t].rows, n});
  }
  auto tiles = TilesOp::create(rewriter, loc, dest, offsets, sizes);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(&tiles.getBodyBlock());
    SmallVector<Value> values;
    for (auto [t, slot] :
         llvm::enumerate(tiles.getBodyBlock().getArguments())) {
      const planner::RankMajorTile &tile = layout[t];
      int64_t rows = tile.rows;
      // This rank's chunk: contiguous rows of its A. Step s receives block
      // (r + s) mod G's chunk from its owner, which shifts it by -s.
      Value local = rb.rowsAt(
          op.getA(), rewriter.getIndexAttr(tile.chunkOffset), rows);
      Value a = layout.exchanges(t) ? rb.shift(t, local,
                                               rb.empty({rows, k}, aElem))
                                    : local;
      Value acc = rounding ? linalg::FillOp::create(
                                 rewriter, loc, fill.getInputs()[0],
                                 rb.empty({rows, n}, cType.getElementType()))
                                 .getResult(0)
                  : fill ? linalg::FillOp::create(rewriter, loc,
                                                  fill.getInputs()[0], slot)
                               .getResult(0)
                         : slot;
      Value product = rb.matmul(a, op.getB(), acc);
      if (rounding)
        product = convertElementsInto(rewriter, loc, product, slot);
      values.push_back(product);
    }
    YieldOp::create(rewriter, loc, values);
  }
  dest = tiles.getResult();
  Value c = op.getC();
  if (rounding) {
    replaceRounding(rewriter, rounding, reshape, dest);
    rewriter.eraseOp(op);
  } else {
    rewriter.replaceOp(op, dest);
  }
  eraseDeadChain(rewriter, c);
  return success();
}

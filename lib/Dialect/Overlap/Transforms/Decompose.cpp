//===- Decompose.cpp - Split fused ops into tiles ------------*- C++ -*-===//
//
// overlap-decompose: applies each `overlap.plan`. A tile becomes one matmul
// and one tile-level collective on tensors; bufferization and stream
// scheduling work on what this produces.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Remarks.h"
#include "overlap/Dialect/Overlap/Transforms/Passes.h"

#include "PlannerBridge.h"

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
namespace planner = ::overlap::planner;

namespace {

/// Builds the IR of one fused op's tiles at the op's position.
class TileBuilder {
public:
  TileBuilder(RewriterBase &rewriter, Location loc)
      : rewriter(rewriter), loc(loc) {}

  OpFoldResult idx(int64_t v) { return rewriter.getIndexAttr(v); }

  SmallVector<OpFoldResult> idxs(ArrayRef<int64_t> values) {
    return llvm::map_to_vector(values,
                               [&](int64_t v) { return idx(v); });
  }

  Value slice(Value source, ArrayRef<int64_t> offsets,
              ArrayRef<int64_t> sizes) {
    SmallVector<int64_t> ones(offsets.size(), 1);
    return tensor::ExtractSliceOp::create(rewriter, loc, source,
                                          idxs(offsets), idxs(sizes),
                                          idxs(ones));
  }

  Value insert(Value source, Value dest, ArrayRef<int64_t> offsets,
               ArrayRef<int64_t> sizes) {
    SmallVector<int64_t> ones(offsets.size(), 1);
    return tensor::InsertSliceOp::create(rewriter, loc, source, dest,
                                         idxs(offsets), idxs(sizes),
                                         idxs(ones));
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

  Value empty(ArrayRef<int64_t> shape, Type elementType) {
    return tensor::EmptyOp::create(rewriter, loc, shape, elementType);
  }

  /// C + A * B with A: G x m x K, B: K x N (the same for every block),
  /// C: G x m x N -- a strided-batched GEMM with a zero batch stride on B.
  Value batchedMatmul(Value a, Value b, Value c) {
    auto op = linalg::BatchMatmulOp::create(rewriter, loc, TypeRange{c.getType()},
                                            ValueRange{a, b}, ValueRange{c});
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr batch, m, n, k;
    bindDims(ctx, batch, m, n, k);
    auto map = [&](ArrayRef<AffineExpr> results) {
      return AffineMapAttr::get(AffineMap::get(4, 0, results, ctx));
    };
    op->setAttr("indexing_maps",
                rewriter.getArrayAttr({map({batch, m, k}), map({k, n}),
                                       map({batch, m, n})}));
    return op.getResult(0);
  }

  /// A packed buffer of `shape` holding C's rows of one tile: a fill when
  /// C is a fill (no copy of a constant), otherwise a copy of the strided
  /// view `cView()` builds (only then).
  Value packedInit(Value c, function_ref<Value()> cView,
                   ArrayRef<int64_t> shape, Type elementType) {
    Value packed = empty(shape, elementType);
    if (auto fill = c.getDefiningOp<linalg::FillOp>();
        fill && fill.hasPureTensorSemantics())
      return linalg::FillOp::create(rewriter, loc, fill.getInputs()[0], packed)
          .getResult(0);
    return linalg::CopyOp::create(rewriter, loc, cView(), packed)
        .getResult(0);
  }

private:
  RewriterBase &rewriter;
  Location loc;
};

// Tile offsets and, for reduce-scatter and all-gather, the rows and offset
// of each tile within every rank's block come from the Planner's TileLayout
// (the rule overlap-bench runs too), never from arithmetic of their own.

void decomposeAllReduce(RewriterBase &rewriter, MatmulAllReduceOp op,
                        const planner::TileLayout &layout) {
  TileBuilder tb(rewriter, op.getLoc());
  int64_t k = op.getA().getType().getDimSize(1);
  int64_t n = op.getB().getType().getDimSize(1);
  Value acc = op.getC();
  for (const planner::TileSpan &tile : layout.getSpans()) {
    int64_t off = tile.offset, rows = tile.rows;
    Value a = tb.slice(op.getA(), {off, 0}, {rows, k});
    // Tiles are disjoint, so slicing the running result (not C) reads C's
    // rows and lets bufferization keep everything in C's buffer.
    Value c = tb.slice(acc, {off, 0}, {rows, n});
    Value product = linalg::MatmulOp::create(rewriter, op.getLoc(),
                                             TypeRange{c.getType()},
                                             ValueRange{a, op.getB()},
                                             ValueRange{c})
                        .getResult(0);
    Value reduced = AllReduceOp::create(rewriter, op.getLoc(), c.getType(),
                                        product, op.getGridAttr(),
                                        op.getGridAxesAttr(),
                                        ReductionKindAttr::get(rewriter.getContext(), ReductionKind::Sum))
                        .getResult();
    acc = tb.insert(reduced, acc, {off, 0}, {rows, n});
  }
  rewriter.replaceOp(op, acc);
}

void decomposeReduceScatter(RewriterBase &rewriter, MatmulReduceScatterOp op,
                            const planner::TileLayout &layout) {
  TileBuilder tb(rewriter, op.getLoc());
  RankedTensorType cType = op.getC().getType();
  Type elem = cType.getElementType();
  int64_t k = op.getA().getType().getDimSize(1);
  int64_t n = cType.getDimSize(1);
  int64_t group = layout.slots(), blockRows = layout.blockSize();
  // View every rank's block of rows as one batch entry.
  Value a3 = tb.splitRows(op.getA(), group);
  Value c3; // C as blocks, built the first time a tile copies C's rows.
  Value out = tb.empty({blockRows, n}, elem);
  for (const planner::TileSpan &tile : layout.getSpans()) {
    int64_t q = tile.blockRows, o = tile.blockOffset;
    Value a = tb.slice(a3, {0, o, 0}, {group, q, k});
    auto cView = [&, q = q, o = o]() {
      if (!c3)
        c3 = tb.splitRows(op.getC(), group);
      return tb.slice(c3, {0, o, 0}, {group, q, n});
    };
    Value init = tb.packedInit(op.getC(), cView, {group, q, n}, elem);
    Value packed = tb.joinRows(tb.batchedMatmul(a, op.getB(), init));
    // Scatter straight into this tile's rows of the result.
    Value slot = tb.slice(out, {o, 0}, {q, n});
    Value scattered =
        ReduceScatterOp::create(rewriter, op.getLoc(), slot.getType(), packed,
                                slot, op.getGridAttr(), op.getGridAxesAttr(),
                                ReductionKindAttr::get(rewriter.getContext(),
                                                       ReductionKind::Sum))
            .getResult();
    out = tb.insert(scattered, out, {o, 0}, {q, n});
  }
  Value c = op.getC();
  rewriter.replaceOp(op, out);
  // A fill accumulator was replaced by fills of the packed buffers; drop it
  // (and its empty tensor) rather than leave bufferization a dead buffer.
  if (auto fill = c.getDefiningOp<linalg::FillOp>(); fill && fill->use_empty()) {
    Value init = fill.getOutputs()[0];
    rewriter.eraseOp(fill);
    if (auto empty = init.getDefiningOp<tensor::EmptyOp>();
        empty && empty->use_empty())
      rewriter.eraseOp(empty);
  }
}

void decomposeAllGather(RewriterBase &rewriter, AllGatherMatmulOp op,
                        const planner::TileLayout &layout) {
  TileBuilder tb(rewriter, op.getLoc());
  RankedTensorType cType = op.getC().getType();
  int64_t k = op.getA().getType().getDimSize(1);
  int64_t n = cType.getDimSize(1);
  int64_t group = layout.slots();
  Value acc = tb.splitRows(op.getC(), group);
  for (const planner::TileSpan &tile : layout.getSpans()) {
    int64_t q = tile.blockRows, o = tile.blockOffset;
    Value local = tb.slice(op.getA(), {o, 0}, {q, k});
    auto gatheredType = RankedTensorType::get(
        {group * q, k}, op.getA().getType().getElementType());
    Value gathered =
        AllGatherOp::create(rewriter, op.getLoc(), gatheredType, local,
                            /*init=*/Value(), op.getGridAttr(),
                            op.getGridAxesAttr())
            .getResult();
    Value a = tb.splitRows(gathered, group);
    Value c = tb.slice(acc, {0, o, 0}, {group, q, n});
    Value product = tb.batchedMatmul(a, op.getB(), c);
    acc = tb.insert(product, acc, {0, o, 0}, {group, q, n});
  }
  rewriter.replaceOp(op, tb.joinRows(acc));
}

struct OverlapDecomposePass
    : public mlir::overlap::impl::OverlapDecomposeBase<OverlapDecomposePass> {
  void runOnOperation() override {
    SmallVector<Operation *> fused;
    getOperation().walk([&](Operation *op) {
      if (isa<MatmulAllReduceOp, MatmulReduceScatterOp, AllGatherMatmulOp>(
              op))
        fused.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    SymbolTableCollection symbols;
    for (Operation *op : fused) {
      auto plan =
          op->getAttrOfType<PlanAttr>(OverlapDialect::getPlanAttrName());
      if (!plan) {
        remarkMissed(op, "not-decomposed", "overlap-decompose",
                     "not decomposed: no '" +
                         OverlapDialect::getPlanAttrName() +
                         "' attribute (run overlap-plan first)");
        continue;
      }
      if (ShapedType::isDynamic(fusedRows(op))) {
        remarkMissed(op, "not-decomposed", "overlap-decompose",
                     "not decomposed: M is not static");
        continue;
      }
      // Reduce-scatter and all-gather address every rank's block of rows;
      // the all-reduce layout does not depend on the group.
      int64_t group = 1;
      if (!isa<MatmulAllReduceOp>(op)) {
        group = groupSizeOf(op, symbols);
        if (ShapedType::isDynamic(group)) {
          remarkMissed(op, "not-decomposed", "overlap-decompose",
                       "not decomposed: the group size of " +
                           remarkText(op->getAttr("grid")) + " is not static");
          continue;
        }
      }
      FailureOr<planner::TileLayout> layout = tileLayoutOf(op, plan, group);
      if (failed(layout)) {
        signalPassFailure();
        continue;
      }
      rewriter.setInsertionPoint(op);
      if (auto ar = dyn_cast<MatmulAllReduceOp>(op))
        decomposeAllReduce(rewriter, ar, *layout);
      else if (auto rs = dyn_cast<MatmulReduceScatterOp>(op))
        decomposeReduceScatter(rewriter, rs, *layout);
      else
        decomposeAllGather(rewriter, cast<AllGatherMatmulOp>(op), *layout);
    }
  }
};

} // namespace

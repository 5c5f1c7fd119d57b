//===- FoldIntoGemms.cpp - No copy around a GEMM ---------------*- C++ -*-===//
//
// overlap-fold-into-gemms (Passes.td): what a frontend writes around a
// contraction and a GEMM can do itself becomes part of an `overlap.gemm`
// instead of a pass over memory of its own:
//   - a transposed operand (a weight in PyTorch's [out, in] layout): the
//     GEMM's transpose flag;
//   - a B concatenated along N from pieces (gate and up of a SwiGLU): one
//     GEMM per piece into its columns of the result;
//   - a zero-filled accumulator: the GEMM overwrites (beta = 0);
//   - an f32 result rounded to the operands' f16/bf16 by an elementwise
//     arith.truncf: the GEMM's epilogue rounds.
// Each keeps the order of the f32 sum (init or +0.0, then k = 0, 1, ...)
// and rounds once, so results are bit-identical.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/IR/OverlapOps.h"
#include "overlap/Dialect/Overlap/Transforms/Passes.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"
#include "overlap/Dialect/Overlap/Transforms/Transforms.h"

#include "TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPFOLDINTOGEMMS
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

constexpr llvm::StringLiteral kPass = "overlap-fold-into-gemms";

/// The input of a linalg.transpose (tensors) that swaps the last two
/// dimensions of `v` and keeps the others, or null.
Value transposedFrom(Value v) {
  auto transpose = v.getDefiningOp<linalg::TransposeOp>();
  if (!transpose || !transpose.hasPureTensorSemantics())
    return {};
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = perm.size();
  if (rank < 2)
    return {};
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (perm[i] != i)
      return {};
  if (perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return {};
  return transpose.getInput();
}

/// One piece of a concatenation: `source` fills [offset, offset + size) of
/// the concatenated dimension.
struct Piece {
  Value source;
  int64_t offset, size;
};

/// `v` as pieces along dimension `dim` when it is a chain of
/// tensor.insert_slice into a tensor.empty whose slices are whole along
/// every other dimension, unit-strided, static, and cover `dim` exactly
/// once; empty otherwise.
SmallVector<Piece> concatenationOf(Value v, int64_t dim) {
  SmallVector<Piece> pieces;
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return {};
  Value at = v;
  while (auto insert = at.getDefiningOp<tensor::InsertSliceOp>()) {
    if (insert.getSourceType().getRank() != type.getRank() ||
        !insert.hasUnitStride() ||
        llvm::any_of(insert.getStaticOffsets(), ShapedType::isDynamic) ||
        llvm::any_of(insert.getStaticSizes(), ShapedType::isDynamic))
      return {};
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != dim && (insert.getStaticOffsets()[d] != 0 ||
                       insert.getStaticSizes()[d] != type.getDimSize(d)))
        return {};
    pieces.push_back({insert.getSource(), insert.getStaticOffsets()[dim],
                      insert.getStaticSizes()[dim]});
    at = insert.getDest();
  }
  if (pieces.size() < 2 || !at.getDefiningOp<tensor::EmptyOp>())
    return {};
  // Later inserts overwrite earlier ones: require disjoint pieces that
  // cover the dimension, then sort them by offset.
  llvm::sort(pieces, [](const Piece &x, const Piece &y) {
    return x.offset < y.offset;
  });
  int64_t next = 0;
  for (const Piece &p : pieces) {
    if (p.offset != next)
      return {};
    next += p.size;
  }
  if (next != type.getDimSize(dim))
    return {};
  return pieces;
}

Value emptyLike(PatternRewriter &rewriter, Location loc, Type type,
                Type element) {
  auto shaped = cast<RankedTensorType>(type);
  return tensor::EmptyOp::create(rewriter, loc, shaped.getShape(), element);
}

GemmOp rebuild(PatternRewriter &rewriter, GemmOp op, Value a, Value b,
               Value init, bool transposeA, bool transposeB, bool accumulate) {
  return GemmOp::create(rewriter, op.getLoc(), init.getType(), a, b, init,
                        transposeA, transposeB, accumulate);
}

/// The folds' remarks, one per source location, name and text with the
/// number of GEMMs it applied to: a fused op decomposed into 8 tiles folds
/// the same transpose 8 times, which is one decision. Without a tally
/// (patterns added by populateOverlapFoldIntoGemmsPatterns) each fold
/// says so itself.
class FoldTally {
public:
  void note(Operation *op, StringRef name, const llvm::Twine &what) {
    Entry entry{op->getLoc(), remarkFunction(op).str(), name.str(),
                what.str(), 1};
    for (Entry &seen : entries)
      if (seen.loc == entry.loc && seen.name == entry.name &&
          seen.what == entry.what) {
        ++seen.count;
        return;
      }
    entries.push_back(std::move(entry));
  }
  void emit() const {
    for (const Entry &e : entries)
      if (remark::detail::InFlightRemark r = emitRemarkAt(
              remark::passed, e.loc, e.function, e.name, kPass))
        r << e.what +
                 (e.count > 1 ? " (" + std::to_string(e.count) + " GEMMs)"
                              : std::string());
  }

private:
  struct Entry {
    Location loc;
    std::string function, name, what;
    int64_t count;
  };
  SmallVector<Entry> entries;
};

/// A rule on overlap.gemm that reports to `tally` when it has one.
struct FoldPattern : OpRewritePattern<GemmOp> {
  FoldPattern(MLIRContext *context, FoldTally *tally = nullptr)
      : OpRewritePattern(context), tally(tally) {}

protected:
  void folded(Operation *op, StringRef name, const llvm::Twine &what) const {
    if (tally)
      tally->note(op, name, what);
    else
      remarkPassed(op, name, kPass, what);
  }
  /// Replaces `op` by the GEMM a fold rebuilt it as, and says so in the
  /// remark `name`.
  LogicalResult replaceFolded(PatternRewriter &rewriter, GemmOp op,
                              GemmOp rebuilt, StringRef name,
                              const llvm::Twine &why) const {
    folded(rebuilt, name, why);
    rewriter.replaceOp(op, rebuilt);
    return success();
  }

private:
  FoldTally *tally;
};

/// linalg.matmul / linalg.batch_matmul (its default maps, or B broadcast)
/// on static tensors of the types overlap_gemm takes becomes an
/// overlap.gemm that accumulates, when one of the folds below applies to
/// it (otherwise it stays: nothing would be saved).
template <typename OpTy> struct LinalgToGemm : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return failure();
    if constexpr (std::is_same_v<OpTy, linalg::MatmulOp>) {
      if (op.hasUserDefinedMaps())
        return failure();
    } else {
      if (op.hasUserDefinedMaps()) {
        MLIRContext *ctx = op.getContext();
        AffineExpr batch, m, n, k;
        bindDims(ctx, batch, m, n, k);
        SmallVector<AffineMap> broadcast = {
            AffineMap::get(4, 0, {batch, m, k}, ctx),
            AffineMap::get(4, 0, {k, n}, ctx),
            AffineMap::get(4, 0, {batch, m, n}, ctx)};
        if (op.getIndexingMapsArray() != broadcast)
          return failure();
      }
    }
    Value a = op.getInputs()[0], b = op.getInputs()[1],
          init = op.getOutputs()[0];
    Type ab = getElementTypeOrSelf(a), c = getElementTypeOrSelf(init);
    if (!isGemmElementType(ab) || getElementTypeOrSelf(b) != ab ||
        (!c.isF32() && c != ab))
      return failure();
    for (Value v : {a, b, init})
      if (!cast<RankedTensorType>(v.getType()).hasStaticShape())
        return failure();
    Operation *reshape;
    bool folds = transposedFrom(a) || transposedFrom(b) ||
                 isPositiveZero(init) ||
                 (cast<RankedTensorType>(b.getType()).getRank() == 2 &&
                  !concatenationOf(b, 1).empty()) ||
                 (c.isF32() && !ab.isF32() &&
                  roundingUser(op->getResult(0), ab, reshape));
    if (!folds)
      return failure();
    rewriter.replaceOpWithNewOp<GemmOp>(op, init.getType(), a, b, init,
                                        /*transpose_a=*/false,
                                        /*transpose_b=*/false,
                                        /*accumulate=*/true);
    return success();
  }
};

/// A transposed operand is read as it lies.
struct FoldTranspose : FoldPattern {
  using FoldPattern::FoldPattern;
  LogicalResult matchAndRewrite(GemmOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getResult())
      return failure();
    Value a = op.getA(), b = op.getB();
    bool ta = op.getTransposeA(), tb = op.getTransposeB();
    if (Value from = transposedFrom(a)) {
      a = from;
      ta = !ta;
    } else if (Value from = transposedFrom(b)) {
      b = from;
      tb = !tb;
    } else {
      return failure();
    }
    return replaceFolded(
        rewriter, op,
        rebuild(rewriter, op, a, b, op.getInit(), ta, tb, op.getAccumulate()),
        "transpose-folded",
        "a transposed operand is read in place (the GEMM's transpose flag): "
        "no transposed copy");
  }
};

/// A +0.0 accumulator is not read: the GEMM overwrites.
struct FoldZeroInit : FoldPattern {
  using FoldPattern::FoldPattern;
  LogicalResult matchAndRewrite(GemmOp op,
                                PatternRewriter &rewriter) const override {
    linalg::FillOp direct;
    if (!op.getResult() || !op.getAccumulate() ||
        !isPositiveZero(op.getInit(), &direct))
      return failure();
    auto type = cast<RankedTensorType>(op.getInit().getType());
    if (!direct && !type.hasStaticShape())
      return failure();
    Value init =
        direct ? direct.getOutputs()[0]
               : emptyLike(rewriter, op.getLoc(), type, type.getElementType());
    return replaceFolded(rewriter, op,
                         rebuild(rewriter, op, op.getA(), op.getB(), init,
                                 op.getTransposeA(), op.getTransposeB(),
                                 /*accumulate=*/false),
                         "fill-folded",
                         "a zero accumulator is not filled: the GEMM "
                         "overwrites (beta = 0)");
  }
};

/// An overwriting f32 GEMM whose result is only rounded to the operands'
/// type writes that type: the epilogue rounds.
struct FoldRounding : FoldPattern {
  using FoldPattern::FoldPattern;
  LogicalResult matchAndRewrite(GemmOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getResult() || op.getAccumulate())
      return failure();
    Type ab = getElementTypeOrSelf(op.getA());
    auto type = cast<RankedTensorType>(op.getInit().getType());
    if (ab.isF32() || !type.getElementType().isF32() || !type.hasStaticShape())
      return failure();
    Operation *reshape;
    linalg::GenericOp round = roundingUser(op.getResult(), ab, reshape);
    if (!round)
      return failure();
    rewriter.setInsertionPoint(round);
    Value init = reshape ? emptyLike(rewriter, op.getLoc(), type, ab)
                         : round.getDpsInits()[0];
    Value rounded = rebuild(rewriter, op, op.getA(), op.getB(), init,
                            op.getTransposeA(), op.getTransposeB(),
                            /*accumulate=*/false)
                        .getResult();
    rounded = reapplyReshape(rewriter, reshape, rounded,
                             round.getResult(0).getType());
    rewriter.replaceOp(round, rounded);
    if (reshape)
      rewriter.eraseOp(reshape);
    rewriter.eraseOp(op);
    folded(rounded.getDefiningOp(), "rounding-folded",
           "the f32 sum is rounded in the GEMM's epilogue: no f32 "
           "buffer and no rounding pass");
    return success();
  }
};

/// B concatenated along N from pieces: one GEMM per piece into its
/// columns of the result, each reading its piece where it lies.
struct SplitConcatenatedB : FoldPattern {
  using FoldPattern::FoldPattern;
  LogicalResult matchAndRewrite(GemmOp op,
                                PatternRewriter &rewriter) const override {
    auto bType = cast<ShapedType>(op.getB().getType());
    if (!op.getResult() || bType.getRank() != 2)
      return failure();
    SmallVector<Piece> pieces =
        concatenationOf(op.getB(), op.getTransposeB() ? 0 : 1);
    if (pieces.empty())
      return failure();
    auto initType = cast<RankedTensorType>(op.getInit().getType());
    int64_t rank = initType.getRank();
    Location loc = op.getLoc();
    Value acc = op.getInit();
    for (const Piece &p : pieces) {
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0)), sizes,
          strides(rank, rewriter.getIndexAttr(1));
      for (int64_t d = 0; d < rank; ++d)
        sizes.push_back(rewriter.getIndexAttr(initType.getDimSize(d)));
      offsets[rank - 1] = rewriter.getIndexAttr(p.offset);
      sizes[rank - 1] = rewriter.getIndexAttr(p.size);
      Value slice = tensor::ExtractSliceOp::create(rewriter, loc, acc, offsets,
                                                   sizes, strides);
      Value part =
          rebuild(rewriter, op, op.getA(), p.source, slice, op.getTransposeA(),
                  op.getTransposeB(), op.getAccumulate())
              .getResult();
      acc = tensor::InsertSliceOp::create(rewriter, loc, part, acc, offsets,
                                          sizes, strides);
    }
    rewriter.replaceOp(op, acc);
    folded(acc.getDefiningOp(), "concatenation-split",
           "B is " + std::to_string(pieces.size()) +
               " pieces concatenated along N: one GEMM per piece "
               "into its columns, no concatenated copy");
    return success();
  }
};

void addPatterns(RewritePatternSet &patterns, FoldTally *tally) {
  MLIRContext *context = patterns.getContext();
  patterns.add<LinalgToGemm<linalg::MatmulOp>,
               LinalgToGemm<linalg::BatchMatmulOp>>(context);
  patterns.add<FoldTranspose, FoldZeroInit, FoldRounding, SplitConcatenatedB>(
      context, tally);
}

struct OverlapFoldIntoGemmsPass
    : public mlir::overlap::impl::OverlapFoldIntoGemmsBase<
          OverlapFoldIntoGemmsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    FoldTally tally;
    addPatterns(patterns, &tally);
    // Only these rewrites (and erasing what they leave dead): no folding
    // or region simplification of the rest of the program.
    GreedyRewriteConfig config;
    config.enableFolding(false)
        .enableConstantCSE(false)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
    tally.emit();
  }
};

} // namespace

void mlir::overlap::populateOverlapFoldIntoGemmsPatterns(
    RewritePatternSet &patterns) {
  addPatterns(patterns, nullptr);
}

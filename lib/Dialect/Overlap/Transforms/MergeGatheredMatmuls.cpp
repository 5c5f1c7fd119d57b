//===- MergeGatheredMatmuls.cpp - One gather, one GEMM -------*- C++ -*-===//
//
// Part of overlap-raise's normalization: the matmuls that read one gathered
// operand as their left operand (gate and up of a SwiGLU, separate Q, K
// and V projections) become one matmul of the weights side by side along
// N, each consumer taking its columns, so that the gather is fused once and
// every gathered tile feeds every consumer's GEMM, whatever the consumers
// do with their products and wherever they do it.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Remarks.h"

#include "Raise.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::overlap;

namespace {

/// The fill that `c` is, through the views normalization leaves between a
/// fill and the accumulator of a flattened [b, s, k] contraction.
linalg::FillOp fillOf(Value c) {
  while (
      isa_and_nonnull<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
                      tensor::CastOp, linalg::TransposeOp>(c.getDefiningOp()))
    c = c.getDefiningOp()->getOperand(0);
  return c.getDefiningOp<linalg::FillOp>();
}

/// Whether two fills write the same value: one SSA value, or equal
/// constants.
bool sameFillValue(Value x, Value y) {
  if (x == y)
    return true;
  Attribute a, b;
  return matchPattern(x, m_Constant(&a)) && matchPattern(y, m_Constant(&b)) &&
         a == b;
}

/// Adds to `ops` (producers first) what must move in front of `at` for
/// `value` to be available there: side-effect-free ops of `at`'s block
/// after it. False when something cannot move (an op with effects, one in
/// another block, one of `stay`: a sibling matmul the value depends on).
bool collectHoisted(Value value, Operation *at, DominanceInfo &dominance,
                    ArrayRef<Operation *> stay,
                    llvm::SetVector<Operation *> &ops) {
  if (dominance.properlyDominates(value, at))
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != at->getBlock() ||
      llvm::is_contained(stay, def) || !isMemoryEffectFree(def))
    return false;
  if (ops.contains(def))
    return true;
  // Weights are arguments or a few layout ops away from them; a long chain
  // is not worth moving.
  if (ops.size() >= 32)
    return false;
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(def->getRegions(), captured);
  for (Value operand : llvm::concat<Value>(def->getOperands(), captured))
    if (!collectHoisted(operand, at, dominance, stay, ops))
      return false;
  ops.insert(def);
  return true;
}

/// One all-gather feeding several matmuls as their left operand: one
/// matmul of the gathered rows and the weights side by side along N, each
/// consumer taking its columns. It goes where the first of them is, so
/// that whatever uses a product (an elementwise SiLU, a reshape to heads,
/// a scale of Q) still follows it; weights defined later (a transpose
/// normalization wrote) move up with their producers. Each element is
/// computed as before (same row, same column, same order over k). Other
/// users of the gather (a residual add) keep it: overlap-raise then fuses
/// the merged matmul and leaves them a gather of their own.
struct MergeGatheredMatmuls : public OpRewritePattern<shard::AllGatherOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(shard::AllGatherOp gather,
                                PatternRewriter &rewriter) const override {
    Value gathered = gather.getResult();
    SmallVector<linalg::MatmulOp> candidates;
    for (OpOperand &use : gathered.getUses()) {
      auto mm = dyn_cast<linalg::MatmulOp>(use.getOwner());
      if (mm && use.getOperandNumber() == 0 && !mm.hasUserDefinedMaps() &&
          mm.hasPureTensorSemantics() && mm->getBlock() == gather->getBlock() &&
          !llvm::is_contained(candidates, mm))
        candidates.push_back(mm);
    }
    if (candidates.size() < 2)
      return failure();
    llvm::sort(candidates, [](linalg::MatmulOp x, linalg::MatmulOp y) {
      return x->isBeforeInBlock(y);
    });
    SmallVector<linalg::MatmulOp> matmuls = mergeable(candidates);
    if (matmuls.size() < 2)
      return failure();

    // The merged matmul goes where the first one is: every use of a
    // product follows it. What it reads must be defined by then.
    linalg::MatmulOp first = matmuls.front();
    Value fillValue = fillOf(first.getOutputs()[0]).getInputs()[0];
    DominanceInfo dominance;
    SmallVector<Operation *> stay(matmuls.begin(), matmuls.end());
    llvm::SetVector<Operation *> hoisted;
    if (!collectHoisted(fillValue, first, dominance, stay, hoisted))
      return failure();
    for (linalg::MatmulOp mm : matmuls)
      if (!collectHoisted(mm.getInputs()[1], first, dominance, stay, hoisted))
        return failure();
    for (Operation *op : hoisted)
      rewriter.moveOpBefore(op, first);

    Value product = buildMerged(rewriter, gathered, fillValue, matmuls);
    remarkPassed(product.getDefiningOp(), "merged", "overlap-raise",
                 "merged " + llvm::Twine(matmuls.size()) +
                     " matmuls of one gathered operand into one (weights "
                     "side by side along N, in place of the first), so the "
                     "gather is overlapped once for all of them");
    int64_t m = cast<RankedTensorType>(product.getType()).getDimSize(0);
    int64_t offset = 0;
    for (linalg::MatmulOp mm : matmuls) {
      int64_t cols =
          cast<RankedTensorType>(mm.getInputs()[1].getType()).getDimSize(1);
      Value part = tensor::ExtractSliceOp::create(
          rewriter, mm.getLoc(), product,
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0),
                                 rewriter.getIndexAttr(offset)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(m),
                                 rewriter.getIndexAttr(cols)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                                 rewriter.getIndexAttr(1)});
      offset += cols;
      rewriter.replaceOp(mm, part);
    }
    return success();
  }

  /// The matmuls of `candidates` (in program order) that merge with the
  /// first: static shapes, the same element types, rows and K, and an
  /// accumulator that is a fill of the same value. The others stay.
  static SmallVector<linalg::MatmulOp>
  mergeable(ArrayRef<linalg::MatmulOp> candidates) {
    SmallVector<linalg::MatmulOp> matmuls;
    RankedTensorType b0, c0;
    Value fill0;
    for (linalg::MatmulOp mm : candidates) {
      auto b = dyn_cast<RankedTensorType>(mm.getInputs()[1].getType());
      auto c = dyn_cast<RankedTensorType>(mm.getOutputs()[0].getType());
      linalg::FillOp fill = fillOf(mm.getOutputs()[0]);
      if (!b || !c || !b.hasStaticShape() || !c.hasStaticShape() || !fill)
        continue;
      if (!b0) {
        b0 = b, c0 = c, fill0 = fill.getInputs()[0];
      } else if (b.getElementType() != b0.getElementType() ||
                 c.getElementType() != c0.getElementType() ||
                 b.getDimSize(0) != b0.getDimSize(0) ||
                 c.getDimSize(0) != c0.getDimSize(0) ||
                 !sameFillValue(fill.getInputs()[0], fill0)) {
        continue;
      }
      matmuls.push_back(mm);
    }
    return matmuls;
  }

  /// gathered x [B_0 | B_1 | ...] into a fill of `fillValue`, built in
  /// front of the first of `matmuls`.
  static Value buildMerged(PatternRewriter &rewriter, Value gathered,
                           Value fillValue,
                           ArrayRef<linalg::MatmulOp> matmuls) {
    linalg::MatmulOp first = matmuls.front();
    Location loc = first.getLoc();
    rewriter.setInsertionPoint(first);
    auto bType0 = cast<RankedTensorType>(first.getInputs()[1].getType());
    auto cType0 = cast<RankedTensorType>(first.getOutputs()[0].getType());
    int64_t k = bType0.getDimSize(0), m = cType0.getDimSize(0), n = 0;
    for (linalg::MatmulOp mm : matmuls)
      n += cast<RankedTensorType>(mm.getInputs()[1].getType()).getDimSize(1);
    auto idx = [&](int64_t v) -> OpFoldResult {
      return rewriter.getIndexAttr(v);
    };
    Value weights =
        tensor::EmptyOp::create(rewriter, loc, {k, n}, bType0.getElementType());
    int64_t offset = 0;
    for (linalg::MatmulOp mm : matmuls) {
      int64_t cols =
          cast<RankedTensorType>(mm.getInputs()[1].getType()).getDimSize(1);
      weights = tensor::InsertSliceOp::create(
          rewriter, loc, mm.getInputs()[1], weights, {idx(0), idx(offset)},
          {idx(k), idx(cols)}, {idx(1), idx(1)});
      offset += cols;
    }
    Value acc =
        linalg::FillOp::create(rewriter, loc, fillValue,
                               tensor::EmptyOp::create(rewriter, loc, {m, n},
                                                       cType0.getElementType())
                                   .getResult())
            .getResult(0);
    return linalg::MatmulOp::create(rewriter, loc, acc.getType(),
                                    ValueRange{gathered, weights},
                                    ValueRange{acc})
        .getResult(0);
  }
};

} // namespace

bool mlir::overlap::mayHoistLayoutOfSharedGather(shard::AllGatherOp gather,
                                                 Operation *layout) {
  auto isLayout = [](Operation *op) {
    return isa<tensor::CollapseShapeOp, linalg::TransposeOp>(op);
  };
  // One layout user and no other contraction (which normalization may yet
  // turn into a layout and a matmul): the hoist then adds one gather, not
  // one per contraction, and the rest of the users are not matmuls' (an
  // elementwise residual add).
  if (llvm::any_of(gather->getUsers(), [&](Operation *user) {
        auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
        return user != layout &&
               (isLayout(user) ||
                (linalgOp && linalgOp.getNumReductionLoops() > 0));
      }))
    return false;
  // And only for a matmul's left operand, which the new gather then meets.
  SmallVector<Value> worklist = {layout->getResult(0)};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      if (isLayout(use.getOwner()))
        worklist.push_back(use.getOwner()->getResult(0));
      else if (isa<linalg::MatmulOp>(use.getOwner()) &&
               use.getOperandNumber() == 0)
        return true;
    }
  }
  return false;
}

void mlir::overlap::populateMergeGatheredMatmulPatterns(
    RewritePatternSet &patterns) {
  patterns.add<MergeGatheredMatmuls>(patterns.getContext());
}

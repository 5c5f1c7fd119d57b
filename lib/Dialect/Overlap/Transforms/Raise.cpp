//===- Raise.cpp - Fuse linalg.matmul with shard collectives -*- C++ -*-===//
//
// overlap-raise: linalg.matmul + shard.all_reduce / shard.reduce_scatter and
// shard.all_gather + linalg.matmul become the fused overlap ops (the
// all-to-all of expert parallelism: RaiseAllToAll.cpp). Every
// candidate that is left alone gets a remark saying why.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"

#include "PlannerBridge.h"
#include "Raise.h"
#include "TensorBuilders.h"
#include "overlap/Dialect/Overlap/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPRAISE
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

/// Looks through `tensor.cast`s, so that a cast between the matmul and the
/// collective does not block raising. Sets `singleUse` to false when one of
/// them has other users; appends them, nearest first, to `casts`.
Value stripCasts(Value value, bool &singleUse,
                 SmallVectorImpl<Operation *> &casts) {
  while (auto cast = value.getDefiningOp<tensor::CastOp>()) {
    if (!cast->hasOneUse())
      singleUse = false;
    casts.push_back(cast);
    value = cast.getSource();
  }
  return value;
}

/// Erases `ops` (nearest user first) once they have no users left.
void eraseDeadChain(RewriterBase &rewriter, ArrayRef<Operation *> ops) {
  for (Operation *op : ops)
    if (op->use_empty())
      rewriter.eraseOp(op);
}

} // namespace

/// Why `matmul` cannot be one half of a fused op, or an empty string.
template <typename MatmulOp>
static std::string whyNotFusableImpl(MatmulOp matmul) {
  if (!matmul.hasPureTensorSemantics())
    return "the matmul works on memrefs; raise runs before bufferization";
  if (matmul.hasUserDefinedMaps())
    return "the matmul has user-defined (transposed or broadcast) indexing "
           "maps, which the fused ops do not express";
  Type elemA = getElementTypeOrSelf(matmul.getInputs()[0].getType());
  Type elemB = getElementTypeOrSelf(matmul.getInputs()[1].getType());
  Type elemC = getElementTypeOrSelf(matmul.getOutputs()[0].getType());
  auto isFloat = [](Type t) { return t.isF16() || t.isBF16() || t.isF32(); };
  if (!isFloat(elemA) || elemA != elemB || (elemC != elemA && !elemC.isF32()))
    return "its element types are not supported (A and B: one of f16, bf16, "
           "f32; C: the same or f32)";
  for (Value v : matmul->getOperands())
    if (auto type = dyn_cast<RankedTensorType>(v.getType());
        !type || !type.hasStaticShape())
      return "a shape is dynamic; planning needs static M, N and K";
  return "";
}

std::string mlir::overlap::whyNotFusable(linalg::MatmulOp matmul) {
  return whyNotFusableImpl(matmul);
}
std::string mlir::overlap::whyNotFusable(linalg::BatchMatmulOp matmul) {
  return whyNotFusableImpl(matmul);
}

void mlir::overlap::remarkNotRaised(Operation *op, StringRef why) {
  remarkMissed(op, "not-raised", "overlap-raise",
               "not raised to a fused overlap op: " + why);
}

namespace {

/// Replaces `collective` (and the casts between it and the matmul) by
/// `fused`, casting back to the collective's result type when it differs.
void replaceWithFused(RewriterBase &rewriter, Operation *collective,
                      Value fused) {
  Value replacement = fused;
  Type wanted = collective->getResult(0).getType();
  if (replacement.getType() != wanted)
    replacement = tensor::CastOp::create(rewriter, collective->getLoc(), wanted,
                                         replacement);
  remarkPassed(fused.getDefiningOp(), "raised", "overlap-raise",
               "raised to " + fused.getDefiningOp()->getName().getStringRef());
  rewriter.replaceOp(collective, replacement);
}

/// matmul -> shard.all_reduce / shard.reduce_scatter: why `op`, whose
/// operand is `matmul`'s result (through casts that have no other users when
/// `singleUse`), cannot become a fused op; empty when it can.
template <typename CollectiveOp>
std::string whyNotFused(CollectiveOp op, linalg::MatmulOp matmul,
                        bool singleUse) {
  constexpr bool isReduceScatter =
      std::is_same_v<CollectiveOp, shard::ReduceScatterOp>;
  StringRef kind = isReduceScatter ? "reduce-scatter" : "all-reduce";
  if (!singleUse || !matmul->hasOneUse())
    return "the unreduced matmul result has other users, which would need "
           "it before the " +
           kind.str();
  if (op.getReduction() != shard::ReductionKind::Sum)
    return "the reduction is '" +
           shard::stringifyReductionKind(op.getReduction()).str() +
           "'; only a sum distributes over the tiles of C + A*B";
  if constexpr (isReduceScatter) {
    if (op.getScatterAxis().getSExtValue() != 0)
      return "the reduce-scatter splits axis " +
             std::to_string(op.getScatterAxis().getSExtValue()) +
             "; only rows (axis 0) keep every tile one contiguous "
             "collective";
  }
  if (std::string why = whyNotFusable(matmul); !why.empty())
    return why;
  // A rounding between the two was looked through: the collective then
  // runs in the rounded type, its input's.
  auto resultType = dyn_cast<RankedTensorType>(op.getResult().getType());
  if (!resultType || resultType.getElementType() !=
                         getElementTypeOrSelf(op.getInput().getType()))
    return "the collective changes the element type";
  if constexpr (isReduceScatter) {
    SymbolTableCollection symbols;
    int64_t group = groupSizeOf(op, symbols);
    int64_t rows =
        cast<RankedTensorType>(matmul.getOutputs()[0].getType()).getDimSize(0);
    if (ShapedType::isDynamic(group) || rows % group != 0)
      return "the group size is not static or does not divide the rows";
  }
  return "";
}

/// The matmuls that read `gather`'s result (through casts) as their left
/// operand, in use order.
SmallVector<linalg::MatmulOp> gatheredMatmuls(shard::AllGatherOp gather) {
  SmallVector<linalg::MatmulOp> matmuls;
  SmallVector<Value> worklist = {gather.getResult()};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      if (auto cast = dyn_cast<tensor::CastOp>(use.getOwner()))
        worklist.push_back(cast.getResult());
      else if (auto matmul = dyn_cast<linalg::MatmulOp>(use.getOwner());
               matmul && use.getOperandNumber() == 0)
        matmuls.push_back(matmul);
    }
  }
  return matmuls;
}

/// How many matmuls other than `matmul` read `gather`'s result (through
/// casts) as their left operand.
int64_t otherGatheredMatmuls(shard::AllGatherOp gather,
                             linalg::MatmulOp matmul) {
  return llvm::count_if(gatheredMatmuls(gather),
                        [&](linalg::MatmulOp m) { return m != matmul; });
}

/// shard.all_gather -> left operand of `matmul` (through casts that have no
/// other users when `singleUse`): why they cannot become a fused op; empty
/// when they can.
std::string whyNotFused(shard::AllGatherOp gather, linalg::MatmulOp matmul,
                        bool singleUse) {
  // Other users of the gathered rows keep a gather of their own (see
  // raiseAllGatherThenMatmul); other matmuls of them would each gather
  // again, where merging them (MergeGatheredMatmuls) gathers once.
  if (!singleUse || !gather->hasOneUse())
    if (int64_t others = otherGatheredMatmuls(gather, matmul); others > 0)
      return "the gathered left operand also feeds " + std::to_string(others) +
             " other matmul(s) that could not be merged with this one "
             "(element types, static shapes or accumulators differ), and "
             "each fused op would gather it again";
  if (gather.getGatherAxis().getSExtValue() != 0)
    return "the all-gather concatenates axis " +
           std::to_string(gather.getGatherAxis().getSExtValue()) +
           "; only rows (axis 0) are handled";
  if (std::string why = whyNotFusable(matmul); !why.empty())
    return why;
  auto localType = dyn_cast<RankedTensorType>(gather.getInput().getType());
  if (!localType || !localType.hasStaticShape() ||
      localType.getElementType() !=
          getElementTypeOrSelf(matmul.getInputs()[0].getType()))
    return "the gathered operand is dynamic or changes element type";
  return "";
}

/// The elementwise f32 -> f16/bf16 rounding (a linalg.generic whose body is
/// one arith.truncf) that produces `value`, if it is one.
linalg::GenericOp narrowingOf(Value value) {
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || !isPlainElementwise(generic))
    return {};
  Block &body = *generic.getBlock();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto trunc = yield.getNumOperands() == 1
                   ? yield.getOperand(0).getDefiningOp<arith::TruncFOp>()
                   : arith::TruncFOp();
  if (!trunc || trunc.getIn() != body.getArgument(0) ||
      !trunc.getIn().getType().isF32() ||
      !(trunc.getType().isF16() || trunc.getType().isBF16()) ||
      body.getOperations().size() != 2 || trunc.getRoundingmodeAttr())
    return {};
  return generic;
}

/// The matmul that produces `collective`'s operand, through casts and at
/// most one rounding to f16/bf16 (appended to `casts` too).
template <typename CollectiveOp>
linalg::MatmulOp producerMatmul(CollectiveOp collective, bool &singleUse,
                                SmallVectorImpl<Operation *> &casts) {
  Value value = stripCasts(collective.getInput(), singleUse, casts);
  if (linalg::GenericOp narrowing = narrowingOf(value)) {
    if (!narrowing->hasOneUse())
      singleUse = false;
    casts.push_back(narrowing);
    value = stripCasts(narrowing.getDpsInputs()[0], singleUse, casts);
  }
  return value.template getDefiningOp<linalg::MatmulOp>();
}

/// The gather that produces `matmul`'s left operand, through casts.
shard::AllGatherOp gatheredLhs(linalg::MatmulOp matmul, bool &singleUse,
                               SmallVectorImpl<Operation *> &casts) {
  if (!matmul.hasPureTensorSemantics())
    return {};
  return stripCasts(matmul.getInputs()[0], singleUse, casts)
      .getDefiningOp<shard::AllGatherOp>();
}

/// matmul -> shard.all_reduce / shard.reduce_scatter. Returns true when it
/// rewrote.
template <typename CollectiveOp>
bool raiseMatmulThenCollective(RewriterBase &rewriter, CollectiveOp op,
                               bool remark = true) {
  bool singleUse = true;
  SmallVector<Operation *> casts;
  linalg::MatmulOp matmul = producerMatmul(op, singleUse, casts);
  if (!matmul)
    return false;
  if (std::string why = whyNotFused(op, matmul, singleUse); !why.empty()) {
    if (remark)
      remarkNotRaised(op, why);
    return false;
  }

  rewriter.setInsertionPoint(op);
  Value a = matmul.getInputs()[0], b = matmul.getInputs()[1];
  Value c = matmul.getOutputs()[0];
  // The result has the collective's element type: C's, or the f16/bf16
  // that a rounding between the two gives.
  Type elem = getElementTypeOrSelf(op.getInput().getType());
  Type fusedType =
      cast<RankedTensorType>(matmul.getResult(0).getType()).clone(elem);
  constexpr bool isReduceScatter =
      std::is_same_v<CollectiveOp, shard::ReduceScatterOp>;
  if constexpr (isReduceScatter) {
    // The users may see a dynamic shape; the fused op states rows = M / G.
    SymbolTableCollection symbols;
    int64_t group = groupSizeOf(op, symbols);
    auto cType = cast<RankedTensorType>(c.getType());
    fusedType = RankedTensorType::get(
        {cType.getDimSize(0) / group, cType.getDimSize(1)}, elem);
  }
  using FusedOp = std::conditional_t<isReduceScatter, MatmulReduceScatterOp,
                                     MatmulAllReduceOp>;
  auto fused = FusedOp::create(rewriter, op.getLoc(), fusedType, a, b, c,
                               op.getGridAttr(), op.getGridAxesAttr());
  replaceWithFused(rewriter, op, fused.getResult());
  casts.push_back(matmul);
  eraseDeadChain(rewriter, casts);
  return true;
}

/// The gathers of `fused`'s rows that other users keep (a residual add of
/// the gathered activation, a cast): the fused op does not yield the rows
/// it gathers (each tile gathers its own into a buffer of its own), so a
/// user other than the matmuls keeps a plain gather of them, a second one.
/// It is one of `fused`'s local operand or of what that is a layout
/// (transpose, collapse) of. Each moves after the fused op where its users
/// allow, so that it queues on the comm stream behind the tile gathers and
/// runs while the tiles' GEMMs compute (overlap-schedule-streams puts it in
/// the same run): the GEMMs then start after one tile's gather instead of
/// the whole, and where they take longer than a gather the second one
/// costs no time, only bytes.
void keepGathersForOtherUsers(RewriterBase &rewriter, AllGatherMatmulOp fused) {
  SmallVector<Value> sources = {fused.getA()};
  while (Operation *def = sources.back().getDefiningOp()) {
    auto transpose = dyn_cast<linalg::TransposeOp>(def);
    if (!isa<tensor::CollapseShapeOp, tensor::CastOp>(def) &&
        !(transpose && transpose.hasPureTensorSemantics()))
      break;
    sources.push_back(def->getOperand(0));
  }
  Block *block = fused->getBlock();
  Operation *after = fused;
  for (Value source : sources) {
    SmallVector<shard::AllGatherOp> gathers;
    for (Operation *user : source.getUsers())
      if (auto gather = dyn_cast<shard::AllGatherOp>(user);
          gather && gather.getGrid() == fused.getGrid() &&
          gather.getGridAxes() == fused.getGridAxes() &&
          gather->getBlock() == block && gather->isBeforeInBlock(fused))
        gathers.push_back(gather);
    for (shard::AllGatherOp gather : gathers) {
      bool movable = llvm::all_of(gather->getUsers(), [&](Operation *user) {
        Operation *at = block->findAncestorOpInBlock(*user);
        return at && fused->isBeforeInBlock(at);
      });
      if (movable) {
        rewriter.moveOpAfter(gather, after);
        after = gather;
      }
      remarkPassed(fused, "gather-kept", "overlap-raise",
                   llvm::Twine("the gathered rows have ") +
                       llvm::Twine(std::distance(gather->getUses().begin(),
                                                 gather->getUses().end())) +
                       " other use(s), which keep a plain all-gather of them" +
                       (movable
                            ? ", moved after the fused op so that it runs "
                              "behind its tile gathers, beside its GEMMs"
                            : " (in place: a user comes before the fused op)"));
    }
  }
}

/// shard.all_gather (rows) -> lhs of linalg.matmul.
bool raiseAllGatherThenMatmul(RewriterBase &rewriter, linalg::MatmulOp matmul,
                              bool remark = true) {
  bool singleUse = true;
  SmallVector<Operation *> casts;
  shard::AllGatherOp gather = gatheredLhs(matmul, singleUse, casts);
  if (!gather)
    return false;
  if (std::string why = whyNotFused(gather, matmul, singleUse); !why.empty()) {
    if (remark)
      remarkNotRaised(matmul, why);
    return false;
  }

  rewriter.setInsertionPoint(matmul);
  auto fused = AllGatherMatmulOp::create(
      rewriter, matmul.getLoc(), matmul.getResult(0).getType(),
      gather.getInput(), matmul.getInputs()[1], matmul.getOutputs()[0],
      gather.getGridAttr(), gather.getGridAxesAttr());
  remarkPassed(fused, "raised", "overlap-raise",
               "raised to " + fused->getName().getStringRef());
  rewriter.replaceOp(matmul, fused.getResult());
  eraseDeadChain(rewriter, casts);
  if (gather->use_empty())
    rewriter.eraseOp(gather);
  keepGathersForOtherUsers(rewriter, fused);
  return true;
}

/// The matmul whose left operand `gather`'s result is, through casts.
linalg::MatmulOp consumerMatmul(shard::AllGatherOp gather) {
  SmallVector<linalg::MatmulOp> matmuls = gatheredMatmuls(gather);
  return matmuls.empty() ? linalg::MatmulOp() : matmuls.front();
}

} // namespace

std::string mlir::overlap::whyNotRaised(Operation *op) {
  auto afterMatmul = [](auto collective) -> std::string {
    bool singleUse = true;
    SmallVector<Operation *> casts;
    linalg::MatmulOp matmul = producerMatmul(collective, singleUse, casts);
    if (!matmul) {
      if (auto expand = collective.getInput()
                            .template getDefiningOp<tensor::ExpandShapeOp>();
          expand && expand.getSrc().template getDefiningOp<linalg::MatmulOp>())
        return "the matmul's rows reach it reshaped to " +
               remarkText(expand.getResultType()) +
               ", and its blocks along that shape are strided in the rows "
               "(a dim before the collective's axis is not 1); strided "
               "tiles are not overlapped yet";
      return "its operand is not the result of a linalg.matmul (a collective "
             "is fused with the matmul that produces it)";
    }
    return whyNotFused(collective, matmul, singleUse);
  };
  if (auto allReduce = dyn_cast<shard::AllReduceOp>(op))
    return afterMatmul(allReduce);
  if (auto reduceScatter = dyn_cast<shard::ReduceScatterOp>(op))
    return afterMatmul(reduceScatter);
  if (isa<shard::AllToAllOp>(op))
    return whyAllToAllNotRaised(op);
  if (auto gather = dyn_cast<shard::AllGatherOp>(op)) {
    linalg::MatmulOp matmul = consumerMatmul(gather);
    bool singleUse = true;
    SmallVector<Operation *> casts;
    if (!matmul && gather->hasOneUse())
      if (auto collapse =
              dyn_cast<tensor::CollapseShapeOp>(*gather->getUsers().begin()))
        for (Operation *user : collapse->getUsers())
          if (isa<linalg::MatmulOp>(user))
            return "its result reaches a matmul reshaped to " +
                   remarkText(collapse.getResultType()) +
                   ", and the gathered blocks are strided in those rows (a "
                   "dim before the gather axis is not 1); strided tiles are "
                   "not overlapped yet";
    if (!matmul)
      for (Operation *user : gather.getInput().getUsers())
        if (auto fused = dyn_cast<AllGatherMatmulOp>(user);
            fused && fused.getA() == gather.getInput() &&
            fused.getGrid() == gather.getGrid() &&
            fused.getGridAxes() == gather.getGridAxes())
          return "the matmuls of these rows are fused (an "
                 "overlap.all_gather_matmul gathers them tile by tile); this "
                 "gather is the one the other users of the rows keep";
    if (!matmul || gatheredLhs(matmul, singleUse, casts) != gather)
      return "its result is not the left operand of a linalg.matmul on "
             "tensors (an all-gather is fused with the matmul that consumes "
             "it)";
    return whyNotFused(gather, matmul, singleUse);
  }
  return "only all-reduce, reduce-scatter, all-gather and all-to-all are "
         "fused with a matmul";
}

namespace {

struct OverlapRaisePass
    : public mlir::overlap::impl::OverlapRaiseBase<OverlapRaisePass> {
  void runOnOperation() override {
    {
      RewritePatternSet patterns(&getContext());
      populateNormalizeContractionPatterns(patterns);
      // Only the normalization: no folding of the rest of the program.
      GreedyRewriteConfig config;
      config.enableFolding(false);
      config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
      if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                       config)))
        return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (isa<shard::AllReduceOp, shard::ReduceScatterOp>(op))
        candidates.push_back(op);
    });
    for (Operation *op : candidates) {
      if (auto allReduce = dyn_cast<shard::AllReduceOp>(op))
        raiseMatmulThenCollective(rewriter, allReduce);
      else if (auto reduceScatter = dyn_cast<shard::ReduceScatterOp>(op))
        raiseMatmulThenCollective(rewriter, reduceScatter);
    }
    // Matmuls erased above are gone from the IR; walk again for gathers.
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    for (linalg::MatmulOp matmul : matmuls)
      raiseAllGatherThenMatmul(rewriter, matmul);
    raiseAllToAll(rewriter, getOperation());
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// The raise rules as patterns (Transforms.h)
//===----------------------------------------------------------------------===//

namespace {
/// matmul -> all-reduce / reduce-scatter, rooted at the collective.
template <typename CollectiveOp>
struct RaiseMatmulThenCollective : OpRewritePattern<CollectiveOp> {
  using OpRewritePattern<CollectiveOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(CollectiveOp op,
                                PatternRewriter &rewriter) const override {
    return success(raiseMatmulThenCollective(rewriter, op, /*remark=*/false));
  }
};

/// all-gather -> matmul, rooted at the matmul.
struct RaiseAllGatherThenMatmul : OpRewritePattern<linalg::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::MatmulOp op,
                                PatternRewriter &rewriter) const override {
    return success(raiseAllGatherThenMatmul(rewriter, op, /*remark=*/false));
  }
};

/// The expert-parallel forms, rooted at the all-to-all.
struct RaiseAllToAll : OpRewritePattern<shard::AllToAllOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(shard::AllToAllOp op,
                                PatternRewriter &rewriter) const override {
    return success(raiseAllToAllOp(rewriter, op, /*remark=*/false));
  }
};
} // namespace

void mlir::overlap::populateOverlapRaisePatterns(RewritePatternSet &patterns) {
  populateNormalizeContractionPatterns(patterns);
  patterns.add<RaiseMatmulThenCollective<shard::AllReduceOp>,
               RaiseMatmulThenCollective<shard::ReduceScatterOp>,
               RaiseAllGatherThenMatmul, RaiseAllToAll>(patterns.getContext());
}

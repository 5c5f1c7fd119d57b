//===- RaiseAllToAll.cpp - Fuse expert GEMMs with all-to-all --*- C++ -*-===//
//
// overlap-raise, expert parallelism: a `shard.all_to_all` whose result is
// the tokens (left operand) of the experts' matmul becomes
// `overlap.all_to_all_matmul` (dispatch), and one whose operand is the
// experts' matmul result becomes `overlap.matmul_all_to_all` (combine).
// One expert per rank: `linalg.matmul` on rank-2 tokens, split_axis =
// concat_axis = 0. E experts per rank: `linalg.batch_matmul` over the
// experts, split_axis = 0 / concat_axis = 1 for dispatch and the mirror
// for combine. Every all-to-all left alone gets a remark saying why.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/IR/OverlapOps.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"

#include "PlannerBridge.h"
#include "Raise.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace mlir::overlap;

namespace {

/// The experts' matmul on one side of an all-to-all: linalg.matmul (one
/// expert per rank) or linalg.batch_matmul (experts as the batch).
struct ExpertMatmul {
  Operation *op = nullptr;
  Value a, b, c, result;
  int64_t rank = 0;
  std::string whyNot;

  explicit operator bool() const { return op != nullptr; }
};

ExpertMatmul asExpertMatmul(Operation *op) {
  ExpertMatmul m;
  if (auto mm = dyn_cast_or_null<linalg::MatmulOp>(op)) {
    m.op = op;
    m.rank = 2;
    m.whyNot = whyNotFusable(mm);
  } else if (auto bm = dyn_cast_or_null<linalg::BatchMatmulOp>(op)) {
    m.op = op;
    m.rank = 3;
    m.whyNot = whyNotFusable(bm);
  } else {
    return m;
  }
  auto linalgOp = cast<linalg::LinalgOp>(op);
  if (linalgOp.hasPureTensorSemantics()) {
    m.a = linalgOp.getDpsInputs()[0];
    m.b = linalgOp.getDpsInputs()[1];
    m.c = linalgOp.getDpsInits()[0];
    m.result = op->getResult(0);
  }
  return m;
}

/// The axes `a2a` must split and concatenate for the `side` of an expert
/// matmul of `rank`: (0, 0) for one expert per rank; (0, 1) for dispatch
/// and (1, 0) for combine with experts as the batch.
std::string checkAxes(shard::AllToAllOp a2a, int64_t rank, bool dispatch) {
  int64_t split = a2a.getSplitAxis().getSExtValue();
  int64_t concat = a2a.getConcatAxis().getSExtValue();
  int64_t wantSplit = rank == 2 ? 0 : (dispatch ? 0 : 1);
  int64_t wantConcat = rank == 2 ? 0 : (dispatch ? 1 : 0);
  if (split == wantSplit && concat == wantConcat)
    return "";
  return "the all-to-all has split_axis = " + std::to_string(split) +
         " and concat_axis = " + std::to_string(concat) + "; " +
         (rank == 2 ? "with a linalg.matmul (one expert per rank) only "
                      "split_axis = 0 concat_axis = 0 is handled"
          : dispatch
              ? "before a linalg.batch_matmul over experts only split_axis "
                "= 0 concat_axis = 1 (experts x tokens) is handled"
              : "after a linalg.batch_matmul over experts only split_axis "
                "= 1 concat_axis = 0 is handled");
}

std::string checkGroup(shard::AllToAllOp a2a) {
  SymbolTableCollection symbols;
  int64_t group = groupSizeOf(a2a, symbols);
  if (ShapedType::isDynamic(group))
    return "the group size of " + remarkText(a2a.getGridAttr()) +
           " is not static";
  auto type = dyn_cast<RankedTensorType>(a2a.getInput().getType());
  if (!type || !type.hasStaticShape())
    return "the exchanged tokens have a dynamic shape; planning needs "
           "static token counts (pad them to a fixed capacity)";
  int64_t axis = a2a.getSplitAxis().getSExtValue();
  int64_t extent = type.getDimSize(axis);
  if (extent % group != 0)
    return "dimension " + std::to_string(axis) + " of the exchanged tensor (" +
           std::to_string(extent) + ") is not divisible by the group size " +
           std::to_string(group) +
           ": every rank must send every rank an equal block (pad the "
           "tokens to a capacity that is a multiple of the group size)";
  return "";
}

/// Dispatch: why `a2a` and the matmul that consumes its result cannot
/// fuse; empty when they can (`matmul` set) or when no matmul uses its
/// result (`matmul` not set). Sets `matmul` when one does.
std::string whyNotDispatch(shard::AllToAllOp a2a, ExpertMatmul &matmul) {
  // The matmul that takes the tokens as its left operand; failing that,
  // one that takes them otherwise (the reason names it).
  bool tokens = false;
  for (OpOperand &use : a2a->getUses()) {
    if (ExpertMatmul m = asExpertMatmul(use.getOwner()); m && !tokens) {
      matmul = m;
      tokens = use.getOperandNumber() == 0;
    }
  }
  if (!matmul)
    return "";
  if (!tokens)
    return "its result is not the left operand (tokens) of a linalg.matmul "
           "or linalg.batch_matmul";
  if (!a2a->hasOneUse())
    return "its result has other users than one matmul";
  if (!matmul.whyNot.empty())
    return matmul.whyNot;
  if (std::string why = checkAxes(a2a, matmul.rank, true); !why.empty())
    return why;
  return checkGroup(a2a);
}

/// Combine: why `a2a` and the matmul that produces its operand cannot
/// fuse; empty when they can. Sets `matmul`.
std::string whyNotCombine(shard::AllToAllOp a2a, ExpertMatmul &matmul) {
  matmul = asExpertMatmul(a2a.getInput().getDefiningOp());
  if (!matmul)
    return "its operand is not the result of a linalg.matmul or "
           "linalg.batch_matmul";
  if (!matmul.op->hasOneUse())
    return "the experts' matmul result has other users, which would need "
           "it before the all-to-all";
  if (!matmul.whyNot.empty())
    return matmul.whyNot;
  if (std::string why = checkAxes(a2a, matmul.rank, false); !why.empty())
    return why;
  return checkGroup(a2a);
}

void raised(Operation *fused) {
  remarkPassed(fused, "raised", "overlap-raise",
               "raised to " + fused->getName().getStringRef());
}

} // namespace

std::string mlir::overlap::whyAllToAllNotRaised(Operation *op) {
  auto a2a = cast<shard::AllToAllOp>(op);
  ExpertMatmul matmul;
  std::string combine = whyNotCombine(a2a, matmul);
  if (combine.empty() || matmul)
    return combine;
  ExpertMatmul consumer;
  std::string dispatch = whyNotDispatch(a2a, consumer);
  if (consumer)
    return dispatch;
  if (a2a.getInput().getDefiningOp<AllToAllMatmulOp>())
    return "its operand is the result of an overlap.all_to_all_matmul: the "
           "experts' matmul between the two all-to-alls is fused with the "
           "dispatch already, and a matmul fuses with one collective (an "
           "activation or a second matmul between them gives each its own)";
  return "it neither consumes the result of the experts' matmul "
         "(linalg.matmul or linalg.batch_matmul: combine) nor feeds its "
         "tokens to one (dispatch)";
}

bool mlir::overlap::raiseAllToAllOp(RewriterBase &rewriter,
                                    shard::AllToAllOp a2a, bool remark) {
  ExpertMatmul matmul;
  // The combine form first: an all-to-all between two expert matmuls takes
  // the one that produced its operand, as the other collectives do.
  if (whyNotCombine(a2a, matmul).empty()) {
    rewriter.setInsertionPoint(a2a);
    auto fused = MatmulAllToAllOp::create(
        rewriter, a2a.getLoc(), a2a.getResult().getType(), matmul.a, matmul.b,
        matmul.c, a2a.getGridAttr(), a2a.getGridAxesAttr());
    raised(fused);
    rewriter.replaceOp(a2a, fused.getResult());
    rewriter.eraseOp(matmul.op);
    return true;
  }
  ExpertMatmul consumer;
  if (whyNotDispatch(a2a, consumer).empty() && consumer) {
    rewriter.setInsertionPoint(consumer.op);
    auto fused = AllToAllMatmulOp::create(
        rewriter, consumer.op->getLoc(), consumer.result.getType(),
        a2a.getInput(), consumer.b, consumer.c, a2a.getGridAttr(),
        a2a.getGridAxesAttr());
    raised(fused);
    rewriter.replaceOp(consumer.op, fused.getResult());
    rewriter.eraseOp(a2a);
    return true;
  }
  if (remark)
    remarkNotRaised(a2a, whyAllToAllNotRaised(a2a));
  return false;
}

void mlir::overlap::raiseAllToAll(RewriterBase &rewriter, Operation *root) {
  SmallVector<shard::AllToAllOp> candidates;
  root->walk([&](shard::AllToAllOp op) { candidates.push_back(op); });
  for (shard::AllToAllOp a2a : candidates)
    (void)raiseAllToAllOp(rewriter, a2a);
}

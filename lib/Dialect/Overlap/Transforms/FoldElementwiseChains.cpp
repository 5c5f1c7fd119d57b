//===- FoldElementwiseChains.cpp - One generic per in-place chain -*- C++ -*-===//
//
// overlap-fold-elementwise-chains: before one-shot bufferization, fuse each
// elementwise linalg.generic in the destination-reuse form (its init is one
// of its inputs, as convert-elementwise-to-linalg makes arith and math on
// tensors) with the elementwise generics that produce its inputs for it
// alone.
//
// Why: one-shot bufferization decides in place operand by operand, and
// each decision compares every read with every write of the operand's
// alias set. A chain of n in-place elementwise ops is one alias set of n
// values, so the analysis is cubic in n (upstream's too: 400 ops 3 s, 1,000
// ops over a minute). Fused, the chain is a few generics; the values are
// the same (each element goes through the same scalar ops in the same
// order) and the buffer is the one the in-place chain would have written:
// the chain's first destination.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPFOLDELEMENTWISECHAINS
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

/// A fused body stops growing at this many ops: fusing clones the producer's
/// body into the consumer's, so an unbounded chain of n ops would cost n^2/2
/// clones; bounded, n * kMaxBodyOps, and the n / kMaxBodyOps generics left
/// are a chain short enough for the analysis.
constexpr size_t kMaxBodyOps = 64;

/// Elementwise on tensors with one result that does not read its init: any
/// tensor of the init's type is as good a destination.
bool isElementwise(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops())
    return false;
  OpOperand *init = op.getDpsInitOperand(0);
  return op.getMatchingIndexingMap(init).isPermutation() &&
         !op.payloadUsesValueFromOperand(init);
}

/// The destination-reuse form: the init is also an input.
bool reusesInput(linalg::GenericOp op) {
  Value init = op.getDpsInitOperand(0)->get();
  return llvm::any_of(op.getDpsInputOperands(),
                      [&](OpOperand *in) { return in->get() == init; });
}

size_t bodySize(linalg::GenericOp op) {
  return op.getRegion().front().getOperations().size();
}

/// An input of `consumer` whose producer can be fused into it: an
/// elementwise generic in the same block whose result only `consumer` uses,
/// as this one input (and maybe as its init).
OpOperand *fusableInput(linalg::GenericOp consumer) {
  for (OpOperand *in : consumer.getDpsInputOperands()) {
    auto producer = in->get().getDefiningOp<linalg::GenericOp>();
    if (!producer || producer->getBlock() != consumer->getBlock() ||
        !isElementwise(producer) ||
        bodySize(producer) + bodySize(consumer) > kMaxBodyOps)
      continue;
    Value v = in->get();
    if (llvm::any_of(v.getUsers(),
                     [&](Operation *user) { return user != consumer; }))
      continue;
    if (llvm::count_if(consumer.getDpsInputOperands(), [&](OpOperand *o) {
          return o->get() == v;
        }) != 1)
      continue;
    if (!linalg::areElementwiseOpsFusable(in))
      continue;
    return in;
  }
  return nullptr;
}

struct OverlapFoldElementwiseChainsPass
    : public mlir::overlap::impl::OverlapFoldElementwiseChainsBase<
          OverlapFoldElementwiseChainsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation()->walk(
        [&](linalg::GenericOp op) { generics.push_back(op); });
    IRRewriter rewriter(&getContext());
    llvm::SmallPtrSet<Operation *, 16> erased;
    for (linalg::GenericOp consumer : generics) {
      if (erased.contains(consumer))
        continue;
      while (isElementwise(consumer) && reusesInput(consumer)) {
        OpOperand *in = fusableInput(consumer);
        if (!in)
          break;
        auto producer = in->get().getDefiningOp<linalg::GenericOp>();
        // The consumer does not read its init: the producer's init (the
        // same type, defined before the producer) serves as well, and the
        // producer's result is left with the one use fusion removes.
        OpOperand *init = consumer.getDpsInitOperand(0);
        if (init->get() == in->get())
          rewriter.modifyOpInPlace(consumer, [&] {
            init->set(producer.getDpsInitOperand(0)->get());
          });
        rewriter.setInsertionPoint(consumer);
        FailureOr<linalg::ElementwiseOpFusionResult> fused =
            linalg::fuseElementwiseOps(rewriter, in);
        if (failed(fused))
          break;
        for (auto [from, to] : fused->replacements)
          rewriter.replaceAllUsesWith(from, to);
        erased.insert(consumer);
        rewriter.eraseOp(consumer);
        if (producer->use_empty()) {
          erased.insert(producer);
          rewriter.eraseOp(producer);
        }
        consumer = cast<linalg::GenericOp>(fused->fusedOp);
      }
    }
  }
};

} // namespace

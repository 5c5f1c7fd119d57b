//===- LinalgToGPU.cpp - Linalg ops without a runtime call to GPU kernels -===//
//
// overlap-linalg-to-gpu: with target=cuda every buffer lives in device
// memory, so the ops that target=host runs inline on the host (an
// elementwise linalg.generic, a linalg.fill, a copy the runtime cannot
// express) must run on the GPU. Each becomes a gpu.launch over its parallel
// iteration space, flattened: one thread per point, consecutive threads on
// consecutive innermost indices (coalesced), any rank and dynamic sizes,
// no grid-dimension limits. Reduction dimensions stay sequential loops in
// the thread. gpu-kernel-outlining then makes the kernels, and
// convert-overlap-to-runtime{target=cuda} launches them on the stream the
// op was scheduled on.
//
//===----------------------------------------------------------------------===//

#include "overlap/Conversion/Passes.h"
#include "overlap/Conversion/RuntimeCalls.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPLINALGTOGPU
#include "overlap/Conversion/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

/// Replaces the loop nest `nest` (just built in place of a linalg op) with a
/// gpu.launch. An outermost scf.parallel is flattened onto the threads;
/// anything else (an op with no parallel dimension) runs in one thread.
void launchNest(RewriterBase &rewriter, Operation *nest, int64_t blockSize) {
  Location loc = nest->getLoc();
  rewriter.setInsertionPoint(nest);
  auto parallel = dyn_cast<scf::ParallelOp>(nest);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);

  // Points per dimension: ceildiv(ub - lb, step).
  SmallVector<Value> counts;
  Value total = one;
  if (parallel) {
    for (auto [lb, ub, step] :
         llvm::zip(parallel.getLowerBound(), parallel.getUpperBound(),
                   parallel.getStep())) {
      // Folded where static, so launches of static shapes have constant
      // grids.
      Value span = rewriter.createOrFold<arith::SubIOp>(loc, ub, lb);
      Value count = rewriter.createOrFold<arith::CeilDivUIOp>(loc, span, step);
      counts.push_back(count);
      total = rewriter.createOrFold<arith::MulIOp>(loc, total, count);
    }
  }
  // An empty iteration space launches nothing (a grid of 0 blocks is an
  // invalid launch).
  if (parallel) {
    std::optional<int64_t> known = getConstantIntValue(total);
    if (known && *known == 0) {
      rewriter.eraseOp(nest);
      return;
    }
    if (!known) {
      Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
      Value any = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne,
                                        total, zero);
      auto ifAny = scf::IfOp::create(rewriter, loc, any, /*withElse=*/false);
      rewriter.setInsertionPoint(ifAny.thenBlock()->getTerminator());
    }
  }
  Value threads =
      arith::ConstantIndexOp::create(rewriter, loc, parallel ? blockSize : 1);
  Value blocks =
      parallel ? rewriter.createOrFold<arith::CeilDivUIOp>(loc, total, threads)
               : one;
  auto launch =
      gpu::LaunchOp::create(rewriter, loc, blocks, one, one, threads, one, one);
  Block &body = launch.getBody().front();
  rewriter.setInsertionPointToStart(&body);
  gpu::TerminatorOp terminator = gpu::TerminatorOp::create(rewriter, loc);
  rewriter.setInsertionPoint(terminator);

  if (!parallel) {
    rewriter.moveOpBefore(nest, terminator);
    return;
  }
  // linear = block_id.x * block_dim.x + thread_id.x; past the end: idle.
  Value linear = arith::AddIOp::create(
      rewriter, loc,
      arith::MulIOp::create(rewriter, loc, launch.getBlockIds().x, threads),
      launch.getThreadIds().x);
  Value inRange = arith::CmpIOp::create(
      rewriter, loc, arith::CmpIPredicate::ult, linear, total);
  auto guard = scf::IfOp::create(rewriter, loc, inRange, /*withElse=*/false);
  rewriter.setInsertionPoint(guard.thenBlock()->getTerminator());
  // Row-major delinearization, innermost dimension fastest.
  IRMapping map;
  Value rest = linear;
  SmallVector<Value> ivs(counts.size());
  for (int64_t d = counts.size() - 1; d >= 0; --d) {
    Value index = d == 0
                      ? rest
                      : arith::RemUIOp::create(rewriter, loc, rest, counts[d])
                            .getResult();
    if (d > 0)
      rest = arith::DivUIOp::create(rewriter, loc, rest, counts[d]);
    Value scaled =
        arith::MulIOp::create(rewriter, loc, index, parallel.getStep()[d]);
    ivs[d] = arith::AddIOp::create(rewriter, loc, parallel.getLowerBound()[d],
                                   scaled);
  }
  map.map(parallel.getInductionVars(), ivs);
  for (Operation &op : parallel.getBody()->without_terminator())
    rewriter.clone(op, map);
  rewriter.eraseOp(parallel);
}

/// `op` with its parallel dimensions outermost: linalgOpToParallelLoops
/// makes one scf.parallel of the leading run of parallel dimensions only, so
/// a reduction first ([reduction, parallel], e.g. a column sum) would
/// otherwise leave every parallel dimension sequential in one thread.
FailureOr<Operation *> parallelDimsFirst(RewriterBase &rewriter,
                                         Operation *op) {
  auto linalgOp = cast<linalg::LinalgOp>(op);
  SmallVector<unsigned> order, reductions;
  for (auto [i, type] : llvm::enumerate(linalgOp.getIteratorTypesArray()))
    (linalg::isParallelIterator(type) ? order : reductions).push_back(i);
  if (order.empty())
    return op;
  llvm::append_range(order, reductions);
  if (llvm::equal(order, llvm::seq<unsigned>(0, order.size())))
    return op;
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic) {
    FailureOr<linalg::GenericOp> generalized =
        linalg::generalizeNamedOp(rewriter, linalgOp);
    if (failed(generalized))
      return op->emitOpError()
             << "has a reduction before a parallel dimension and cannot be "
                "generalized to reorder them for a GPU kernel";
    generic = *generalized;
  }
  FailureOr<linalg::GenericOp> interchanged =
      linalg::interchangeGenericOp(rewriter, generic, order);
  if (failed(interchanged))
    return generic->emitOpError()
           << "cannot put its parallel dimensions first for a GPU kernel";
  return interchanged->getOperation();
}

struct OverlapLinalgToGPUPass
    : public mlir::overlap::impl::OverlapLinalgToGPUBase<
          OverlapLinalgToGPUPass> {
  using OverlapLinalgToGPUBase::OverlapLinalgToGPUBase;

  void runOnOperation() override {
    if (blockSize < 1 || blockSize > 1024) {
      getOperation().emitError()
          << "overlap-linalg-to-gpu: block-size must be in 1..1024, got "
          << blockSize;
      return signalPassFailure();
    }
    SmallVector<Operation *> work;
    getOperation().walk([&](Operation *op) {
      if (op->getParentOfType<gpu::LaunchOp>() || lowersToRuntimeCall(op))
        return;
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
        if (linalgOp.hasPureBufferSemantics())
          work.push_back(op);
      } else if (isa<memref::CopyOp>(op)) {
        work.push_back(op);
      }
    });
    IRRewriter rewriter(&getContext());
    for (Operation *op : work) {
      rewriter.setInsertionPoint(op);
      if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        // A copy the runtime cannot do (rank > 3, no unit inner stride).
        op = linalg::CopyOp::create(rewriter, copy.getLoc(), copy.getSource(),
                                    copy.getTarget());
        rewriter.eraseOp(copy);
      }
      FailureOr<Operation *> ordered = parallelDimsFirst(rewriter, op);
      if (failed(ordered))
        return signalPassFailure();
      op = *ordered;
      rewriter.setInsertionPoint(op);
      auto linalgOp = cast<linalg::LinalgOp>(op);
      // linalgOpToParallelLoops builds before the op; remember where it
      // starts so the whole nest (one outermost op) can be found.
      Block *block = op->getBlock();
      Operation *before = op->getPrevNode();
      FailureOr<linalg::LinalgLoops> loops =
          linalg::linalgOpToParallelLoops(rewriter, linalgOp);
      if (failed(loops)) {
        op->emitOpError() << "cannot be turned into loops for a GPU kernel";
        return signalPassFailure();
      }
      Operation *nest = loops->empty() ? nullptr : loops->front();
      if (!nest) {
        // A rank-0 op: its body was emitted straight into the block; wrap
        // it in a one-iteration loop so that it becomes a kernel too.
        Block::iterator begin =
            before ? std::next(before->getIterator()) : block->begin();
        rewriter.setInsertionPoint(&*begin);
        Value zero = arith::ConstantIndexOp::create(rewriter, op->getLoc(), 0);
        Value one = arith::ConstantIndexOp::create(rewriter, op->getLoc(), 1);
        auto loop = scf::ForOp::create(rewriter, op->getLoc(), zero, one, one);
        Block::iterator first = std::next(loop->getIterator());
        Block::iterator last = op->getIterator();
        SmallVector<Operation *> moved;
        for (auto it = first; it != last; ++it)
          moved.push_back(&*it);
        for (Operation *m : moved)
          rewriter.moveOpBefore(m, loop.getBody()->getTerminator());
        nest = loop;
      }
      rewriter.eraseOp(op);
      launchNest(rewriter, nest, blockSize);
    }
  }
};

} // namespace

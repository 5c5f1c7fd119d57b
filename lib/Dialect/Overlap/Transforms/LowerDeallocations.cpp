//===- LowerDeallocations.cpp - bufferization.dealloc, scalar ---*- C++ -*-===//
//
// overlap-lower-deallocations: bufferization.dealloc as base-pointer
// comparisons on index values and guarded memref.dealloc ops, with no
// bookkeeping buffers (upstream's generic lowering keeps the pointers in
// host memref<?xindex> arrays, which a device target cannot allocate).
// Pairs whose allocations are known and disjoint (every memref.alloc is
// a buffer of its own, seen through casts, views and scf.if) are not
// compared: a function-end dealloc of N buffers of N layers then costs N
// checks, not N^2 / 2.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPLOWERDEALLOCATIONS
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

/// The memref.alloc / alloca ops `v`'s buffer may come from (through
/// casts, views and the branches of scf.if), or nullopt when unknown (an
/// argument, a call, a loop).
using Origins = std::optional<llvm::SmallPtrSet<Operation *, 4>>;

Origins originsOf(Value v, DenseMap<Value, Origins> &memo, int depth = 0) {
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  Origins out = std::nullopt;
  Operation *def = v.getDefiningOp();
  if (depth > 32 || !def) {
    // unknown
  } else if (isa<memref::AllocOp, memref::AllocaOp>(def)) {
    out.emplace();
    out->insert(def);
  } else if (isa<memref::CastOp, memref::SubViewOp, memref::ReinterpretCastOp,
                 memref::ExpandShapeOp, memref::CollapseShapeOp,
                 memref::TransposeOp, memref::ExtractStridedMetadataOp>(
                 def)) {
    out = originsOf(def->getOperand(0), memo, depth + 1);
  } else if (auto ifOp = dyn_cast<scf::IfOp>(def)) {
    unsigned index = cast<OpResult>(v).getResultNumber();
    out.emplace();
    for (Region *region : {&ifOp.getThenRegion(), &ifOp.getElseRegion()}) {
      Origins branch =
          region->empty()
              ? Origins()
              : originsOf(cast<scf::YieldOp>(
                              region->front().getTerminator())
                              .getOperand(index),
                          memo, depth + 1);
      if (!branch) {
        out = std::nullopt;
        break;
      }
      out->insert(branch->begin(), branch->end());
    }
  }
  memo[v] = out;
  return out;
}

/// Whether `a` and `b` may share a base buffer.
bool mayAlias(Value a, Value b, DenseMap<Value, Origins> &memo) {
  Origins x = originsOf(a, memo), y = originsOf(b, memo);
  if (!x || !y)
    return true;
  return llvm::any_of(*x, [&](Operation *op) { return y->contains(op); });
}

struct LowerDealloc : public OpRewritePattern<bufferization::DeallocOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(bufferization::DeallocOp op,
                                PatternRewriter &rewriter) const override {
    auto ranked = [](Value v) { return isa<MemRefType>(v.getType()); };
    if (!llvm::all_of(op.getMemrefs(), ranked) ||
        !llvm::all_of(op.getRetained(), ranked))
      return rewriter.notifyMatchFailure(op, "an unranked memref");
    Location loc = op.getLoc();
    // The allocation a memref belongs to, and its address.
    SmallVector<Value> buffers, bases, retainedBases;
    auto base = [&](Value memref) {
      auto metadata =
          memref::ExtractStridedMetadataOp::create(rewriter, loc, memref);
      Value buffer = metadata.getBaseBuffer();
      return std::make_pair(
          buffer,
          memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, buffer)
              .getResult());
    };
    for (Value memref : op.getMemrefs()) {
      auto [buffer, address] = base(memref);
      buffers.push_back(buffer);
      bases.push_back(address);
    }
    for (Value memref : op.getRetained())
      retainedBases.push_back(base(memref).second);

    auto cmp = [&](arith::CmpIPredicate pred, Value a, Value b) -> Value {
      return arith::CmpIOp::create(rewriter, loc, pred, a, b);
    };
    auto both = [&](Value a, Value b) -> Value {
      return arith::AndIOp::create(rewriter, loc, a, b);
    };
    Value no = arith::ConstantIntOp::create(rewriter, loc, 0, 1);
    Value yes = arith::ConstantIntOp::create(rewriter, loc, 1, 1);

    DenseMap<Value, Origins> memo;
    ValueRange memrefs = op.getMemrefs(), retained = op.getRetained();
    // A retained value is owned when a buffer of the list that shares its
    // base was owned.
    SmallVector<Value> updated;
    for (auto [r, retainedBase] : llvm::enumerate(retainedBases)) {
      Value owned = no;
      for (auto [i, address] : llvm::enumerate(bases))
        if (mayAlias(memrefs[i], retained[r], memo))
          owned = arith::OrIOp::create(
              rewriter, loc, owned,
              both(op.getConditions()[i],
                   cmp(arith::CmpIPredicate::eq, address, retainedBase)));
      updated.push_back(owned);
    }
    // A buffer is freed when owned, not retained, and not freed already
    // through an earlier alias in the list.
    for (auto [i, address] : llvm::enumerate(bases)) {
      Value free = op.getConditions()[i];
      for (auto [r, retainedBase] : llvm::enumerate(retainedBases))
        if (mayAlias(memrefs[i], retained[r], memo))
          free = both(free,
                      cmp(arith::CmpIPredicate::ne, address, retainedBase));
      for (size_t j = 0; j < i; ++j) {
        if (!mayAlias(memrefs[j], memrefs[i], memo))
          continue;
        Value freedBefore =
            both(op.getConditions()[j],
                 cmp(arith::CmpIPredicate::eq, bases[j], address));
        free =
            both(free, arith::XOrIOp::create(rewriter, loc, freedBefore, yes));
      }
      scf::IfOp::create(rewriter, loc, free, [&](OpBuilder &b, Location l) {
        memref::DeallocOp::create(b, l, buffers[i]);
        scf::YieldOp::create(b, l);
      });
    }
    rewriter.replaceOp(op, updated);
    return success();
  }
};

struct OverlapLowerDeallocationsPass
    : public mlir::overlap::impl::OverlapLowerDeallocationsBase<
          OverlapLowerDeallocationsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerDealloc>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

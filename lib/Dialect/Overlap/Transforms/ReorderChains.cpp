//===- ReorderChains.cpp - OP_Count order and chain fusion ----*- C++ -*-===//
//
// overlap-reorder-chains: rebuilds matrix chains in the Planner's OP_Count
// order, records TEE-ACM2 fusion decisions, and (opt-in) moves sum
// all-reduces past shrinking products.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"

#include "PlannerBridge.h"
#include "overlap/Planner/ChainPlanner.h"
#include "overlap/Planner/CostModel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <map>

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPREORDERCHAINS
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

/// True when `init` is all zeros: a fill with a zero constant, or a zero
/// splat constant.
bool isZeroInit(Value init) {
  if (auto fill = init.getDefiningOp<linalg::FillOp>())
    return matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ||
           matchPattern(fill.getInputs()[0], m_Zero());
  return matchPattern(init, m_AnyZeroFloat()) || matchPattern(init, m_Zero());
}

/// A matmul that may be reassociated: plain maps, static shapes, one
/// element type, zero accumulator.
bool isChainLink(linalg::MatmulOp op) {
  if (!op.hasPureTensorSemantics() || op.hasUserDefinedMaps())
    return false;
  Type elem;
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !type.hasStaticShape())
      return false;
    if (elem && type.getElementType() != elem)
      return false;
    elem = type.getElementType();
  }
  return isZeroInit(op.getOutputs()[0]);
}

/// The chain link that consumes `op`'s result as an input, if that is its
/// only use.
linalg::MatmulOp chainConsumer(linalg::MatmulOp op) {
  if (!op->hasOneUse())
    return {};
  OpOperand &use = *op->getUses().begin();
  auto user = dyn_cast<linalg::MatmulOp>(use.getOwner());
  if (!user || !isChainLink(user) || use.getOperandNumber() >= 2)
    return {};
  return user;
}

struct Chain {
  SmallVector<Value> factors;
  /// Old internal nodes, children before parents.
  SmallVector<linalg::MatmulOp> links;
  int64_t mults = 0;
};

void collect(Value value, Chain &chain, bool isRoot) {
  auto link = value.getDefiningOp<linalg::MatmulOp>();
  if (link && isChainLink(link) && (isRoot || chainConsumer(link))) {
    collect(link.getInputs()[0], chain, false);
    collect(link.getInputs()[1], chain, false);
    auto lhs = cast<RankedTensorType>(link.getInputs()[0].getType());
    auto rhs = cast<RankedTensorType>(link.getInputs()[1].getType());
    chain.mults += lhs.getDimSize(0) * lhs.getDimSize(1) * rhs.getDimSize(1);
    chain.links.push_back(link);
    return;
  }
  chain.factors.push_back(value);
}

SmallVector<int64_t> chainDims(ArrayRef<Value> factors) {
  SmallVector<int64_t> dims = {
      cast<RankedTensorType>(factors.front().getType()).getDimSize(0)};
  for (Value f : factors)
    dims.push_back(cast<RankedTensorType>(f.getType()).getDimSize(1));
  return dims;
}

/// Builds the product of factors i..j (1-based) in the plan's order.
class ChainBuilder {
public:
  ChainBuilder(RewriterBase &rewriter, Location loc, ArrayRef<Value> factors,
               ArrayRef<int64_t> dims, const planner::ChainPlan &plan)
      : rewriter(rewriter), loc(loc), factors(factors), dims(dims) {
    for (const planner::ChainNode &node : plan.nodes)
      nodes[{node.i, node.j}] = &node;
    Type elem = cast<RankedTensorType>(factors[0].getType()).getElementType();
    zero = arith::ConstantOp::create(rewriter, loc, elem,
                                     rewriter.getZeroAttr(elem));
  }

  Value build(int64_t i, int64_t j) {
    if (i == j)
      return factors[i - 1];
    const planner::ChainNode &node = *nodes.at({i, j});
    Value lhs = build(i, node.k);
    Value rhs = build(node.k + 1, j);
    Type elem = zero.getType();
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, {dims[i - 1], dims[j]}, elem);
    Value init =
        linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
    auto matmul =
        linalg::MatmulOp::create(rewriter, loc, TypeRange{init.getType()},
                                 ValueRange{lhs, rhs}, ValueRange{init});
    Fusion decision = node.decision == planner::Fusion::Left    ? Fusion::Left
                      : node.decision == planner::Fusion::Right ? Fusion::Right
                                                                : Fusion::None;
    matmul->setAttr(OverlapDialect::getFusionAttrName(),
                    FusionAttr::get(rewriter.getContext(), decision, node.tileX,
                                    node.tileY, node.finalTransfers));
    return matmul.getResult(0);
  }

private:
  RewriterBase &rewriter;
  Location loc;
  ArrayRef<Value> factors;
  ArrayRef<int64_t> dims;
  std::map<std::pair<int64_t, int64_t>, const planner::ChainNode *> nodes;
  Value zero;
};

/// Erases ops that became dead, with their dead fills and empties.
void eraseDead(RewriterBase &rewriter, ArrayRef<Operation *> ops) {
  for (Operation *op : llvm::reverse(ops)) {
    if (!op->use_empty())
      continue;
    SmallVector<Value> operands(op->getOperands());
    rewriter.eraseOp(op);
    for (Value v : operands) {
      Operation *def = v.getDefiningOp();
      if (def && def->use_empty() &&
          isa<linalg::FillOp, tensor::EmptyOp, arith::ConstantOp>(def))
        eraseDead(rewriter, {def});
    }
  }
}

struct OverlapReorderChainsPass
    : public mlir::overlap::impl::OverlapReorderChainsBase<
          OverlapReorderChainsPass> {
  using OverlapReorderChainsBase::OverlapReorderChainsBase;

  void runOnOperation() override {
    // NaN compares false with everything: test for the valid range.
    if (!(std::isfinite(fastMemory) && fastMemory >= 1)) {
      std::string value;
      llvm::raw_string_ostream(value) << llvm::format("%g", double(fastMemory));
      getOperation().emitError()
          << "overlap-reorder-chains: option fast-memory is " << value
          << "; expected a finite number of elements >= 1";
      return signalPassFailure();
    }
    if (moveCollectives && failed(moveAllCollectives()))
      return signalPassFailure();

    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> roots;
    getOperation().walk([&](Operation *op) {
      if (auto chainOp = dyn_cast<ChainMatmulOp>(op))
        roots.push_back(op);
      else if (auto link = dyn_cast<linalg::MatmulOp>(op);
               link && isChainLink(link) && !chainConsumer(link))
        roots.push_back(op);
    });
    for (Operation *root : roots)
      if (failed(reorder(rewriter, root)))
        return signalPassFailure();
  }

  LogicalResult reorder(RewriterBase &rewriter, Operation *root) {
    Chain chain;
    if (auto chainOp = dyn_cast<ChainMatmulOp>(root)) {
      chain.factors.assign(chainOp.getFactors().begin(),
                           chainOp.getFactors().end());
      for (Value f : chain.factors)
        if (!cast<RankedTensorType>(f.getType()).hasStaticShape()) {
          remarkMissed(root, "not-reordered", "overlap-reorder-chains",
                       "not reordered: a factor has a dynamic shape");
          return success();
        }
      // As written: left to right.
      SmallVector<int64_t> dims = chainDims(chain.factors);
      for (size_t i = 1; i + 1 < dims.size(); ++i)
        chain.mults += dims[0] * dims[i] * dims[i + 1];
    } else {
      collect(root->getResult(0), chain, /*isRoot=*/true);
      if (chain.factors.size() < 3)
        return success(); // One product has one order.
    }

    SmallVector<int64_t> dims = chainDims(chain.factors);
    llvm::Expected<planner::ChainPlan> plan =
        planner::planChain(dims, fastMemory);
    if (!plan)
      return root->emitError()
             << "overlap-reorder-chains: " << llvm::toString(plan.takeError());

    rewriter.setInsertionPoint(root);
    ChainBuilder builder(rewriter, root->getLoc(), chain.factors, dims, *plan);
    Value product = builder.build(1, chain.factors.size());
    rewriter.replaceAllUsesWith(root->getResult(0), product);
    SmallVector<Operation *> old(chain.links.begin(), chain.links.end());
    if (old.empty())
      old.push_back(root);
    eraseDead(rewriter, old);

    const planner::ChainNode &top = plan->nodes.back();
    std::string what = llvm::formatv(
        "chain of {0} matrices {1}{2}: {3} scalar multiplications before, {4} "
        "after; root fusion {5}, modelled transfers {6}",
        chain.factors.size(),
        plan->scalarMults < chain.mults ? "reordered to " : "kept as ",
        plan->order, chain.mults, plan->scalarMults,
        planner::toString(top.decision), plan->totalTransfers);
    if (plan->scalarMults < chain.mults)
      remarkPassed(product.getDefiningOp(), "chain-reordered",
                   "overlap-reorder-chains", what);
    else if (remark::detail::InFlightRemark r =
                 remarkAnalysis(product.getDefiningOp(), "chain-kept",
                                "overlap-reorder-chains"))
      r << what;
    return success();
  }

  //===--------------------------------------------------------------------===//
  // move-collectives
  //===--------------------------------------------------------------------===//

  LogicalResult moveAllCollectives() {
    FailureOr<planner::Profile> prof =
        loadPassProfile(getOperation(), "overlap-reorder-chains", profile);
    if (failed(prof))
      return failure();
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (isa<shard::AllReduceOp, MatmulAllReduceOp>(op))
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    SymbolTableCollection symbols;
    for (Operation *op : candidates)
      moveOne(rewriter, op, *prof, symbols);
    return success();
  }

  void moveOne(RewriterBase &rewriter, Operation *collective,
               const planner::Profile &prof, SymbolTableCollection &symbols) {
    if (auto ar = dyn_cast<shard::AllReduceOp>(collective))
      if (ar.getReduction() != shard::ReductionKind::Sum ||
          ar.getInput().getType() != ar.getResult().getType())
        return;
    // A sum rounded before the all-reduce is not the one after the product.
    if (auto fused = dyn_cast<MatmulAllReduceOp>(collective))
      if (fused.getC().getType() != fused.getResult().getType())
        return;
    Value reduced = collective->getResult(0);
    if (!reduced.hasOneUse())
      return;
    OpOperand &use = *reduced.getUses().begin();
    auto product = dyn_cast<linalg::MatmulOp>(use.getOwner());
    if (!product || use.getOperandNumber() != 0 || !isChainLink(product))
      return;
    auto x = cast<RankedTensorType>(reduced.getType());
    auto w = cast<RankedTensorType>(product.getInputs()[1].getType());
    int64_t m = x.getDimSize(0), n = x.getDimSize(1), p = w.getDimSize(1);
    std::optional<planner::DType> dtype = plannerDType(x.getElementType());
    int64_t group = groupSizeOf(collective, symbols);
    if (!dtype || ShapedType::isDynamic(group))
      return;
    if (p >= n) {
      remarkMissed(collective, "all-reduce-not-moved", "overlap-reorder-chains",
                   "all-reduce not moved: the product with the right factor "
                   "does not shrink the tensor (N = " +
                       llvm::Twine(n) + " -> " + llvm::Twine(p) + " columns)");
      return;
    }
    auto commUs = [&](int64_t cols) -> FailureOr<double> {
      planner::MatmulProblem problem{
          planner::Collective::AllReduce, m, cols, n, *dtype, group};
      llvm::Expected<planner::CostModel> model =
          planner::CostModel::create(prof, problem);
      if (!model) {
        remarkMissed(
            collective, "all-reduce-not-moved", "overlap-reorder-chains",
            "all-reduce not moved: " + llvm::toString(model.takeError()));
        return failure();
      }
      return model->commUs(m);
    };
    FailureOr<double> before = commUs(n), after = commUs(p);
    if (failed(before) || failed(after))
      return;
    // What moving it does to the wire and the predicted time, for both
    // remarks: "{bytes before} -> {after} bytes ... ({us} -> {us} us)".
    int64_t elt = x.getElementTypeBitWidth() / 8;
    auto change = [&](const char *format) {
      return llvm::formatv(format, m * n * elt, m * p * elt, *before, *after)
          .str();
    };
    if (*after >= *before) {
      remarkMissed(collective, "all-reduce-not-moved", "overlap-reorder-chains",
                   change("all-reduce not moved: {0} -> {1} bytes, but the "
                          "profile predicts no shorter communication "
                          "({2:F1} -> {3:F1} us)"));
      return;
    }

    // The same GEMM runs either way (each rank multiplies its partial X by
    // W), so the critical path shrinks by exactly the communication saved.
    rewriter.setInsertionPoint(product);
    Value partial;
    auto gridAttr = collective->getAttrOfType<FlatSymbolRefAttr>("grid");
    auto axesAttr = collective->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
    if (auto ar = dyn_cast<shard::AllReduceOp>(collective)) {
      partial = ar.getInput();
    } else {
      auto fused = cast<MatmulAllReduceOp>(collective);
      partial = linalg::MatmulOp::create(rewriter, fused.getLoc(),
                                         TypeRange{fused.getC().getType()},
                                         ValueRange{fused.getA(), fused.getB()},
                                         ValueRange{fused.getC()})
                    .getResult(0);
    }
    auto moved = MatmulAllReduceOp::create(
        rewriter, product.getLoc(), product.getResult(0).getType(), partial,
        product.getInputs()[1], product.getOutputs()[0], gridAttr, axesAttr);
    remarkPassed(moved, "all-reduce-moved", "overlap-reorder-chains",
                 change("all-reduce moved after the product with the "
                        "replicated right factor: {0} -> {1} bytes on the "
                        "wire, predicted {2:F1} -> {3:F1} us"));
    rewriter.replaceOp(product, moved.getResult());
    rewriter.eraseOp(collective);
  }
};

} // namespace

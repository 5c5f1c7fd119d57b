//===- InlineCollectives.cpp - Inline the callees that hold shard ops -----===//
//
// overlap-inline-collectives: only the entry points get the run-time
// context (convert-overlap-to-runtime adds it as their first argument), so
// a shard op in a function they call has no rank, group or stream to
// lower to. Such callees are inlined (upstream's SCC inliner, bottom-up,
// with a profitability callback that takes exactly them); every other call
// is kept, as the host pipeline keeps calls.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"

#include "mlir/Analysis/CallGraph.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Transforms/Inliner.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPINLINECOLLECTIVES
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

/// A region that holds an op of the shard dialect.
bool holdsShardOps(Region *region) {
  if (!region)
    return false;
  return region
      ->walk([](Operation *op) {
        return isa<shard::ShardDialect>(op->getDialect())
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

struct OverlapInlineCollectivesPass
    : public mlir::overlap::impl::OverlapInlineCollectivesBase<
          OverlapInlineCollectivesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool anyCall = false;
    module.walk([&](CallOpInterface) {
      anyCall = true;
      return WalkResult::interrupt();
    });
    if (!anyCall)
      return markAllAnalysesPreserved();

    CallGraph &cg = getAnalysis<CallGraph>();
    // No simplification pipeline between inlining steps: the program is
    // kept as written, only the calls that must go are gone.
    InlinerConfig config;
    auto runPipeline = [](Pass &, OpPassManager &, Operation *) {
      return success();
    };
    auto profitable = [](const Inliner::ResolvedCall &call) {
      return holdsShardOps(call.targetNode->getCallableRegion());
    };
    Inliner inliner(module, cg, *this, getAnalysisManager(), runPipeline,
                    config, profitable);
    if (failed(inliner.doInlining()))
      return signalPassFailure();

    // What is left: a call the inliner could not take (recursion, a
    // callee it may not inline).
    SymbolTableCollection symbols;
    WalkResult left = module.walk([&](CallOpInterface call) {
      auto callee = dyn_cast_if_present<CallableOpInterface>(
          call.resolveCallableInTable(&symbols));
      if (!callee || !holdsShardOps(callee.getCallableRegion()))
        return WalkResult::advance();
      auto name = callee->getAttrOfType<StringAttr>(
          SymbolTable::getSymbolAttrName());
      call->emitOpError()
          << "calls @" << (name ? name.getValue() : StringRef("?"))
          << ", which holds shard ops, and it could not be inlined (a "
             "recursive call?): only an entry point gets the run-time "
             "context that collectives need";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

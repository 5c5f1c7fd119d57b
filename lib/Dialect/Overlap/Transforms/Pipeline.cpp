//===- Pipeline.cpp - The overlap-pipeline pass pipeline -----*- C++ -*-===//
//
// One flag for users: inline-collectives -> expand-collectives -> raise ->
// reorder-chains -> plan -> decompose, with the options of the passes
// forwarded, then every collective
// left unfused as one unsplit collective, and a check that no shard op is left
// that the later stages cannot lower.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::overlap;

void mlir::overlap::buildOverlapPipeline(OpPassManager &pm,
                                         const OverlapPipelineOptions &opts) {
  pm.addPass(createOverlapInlineCollectives());
  pm.addPass(createOverlapExpandCollectives());
  pm.addPass(createOverlapRaise());
  OverlapReorderChainsOptions chains;
  chains.fastMemory = opts.fastMemory;
  chains.moveCollectives = opts.moveCollectives;
  chains.profile = opts.profile;
  pm.addPass(createOverlapReorderChains(chains));
  OverlapPlanOptions plan;
  plan.profile = opts.profile;
  plan.strategy = opts.strategy;
  plan.ranks = opts.ranks;
  pm.addPass(createOverlapPlan(plan));
  pm.addPass(createOverlapDecompose());
  pm.addPass(createOverlapLowerCollectives());
  pm.addPass(createOverlapFoldIntoGemms());
  pm.addPass(createOverlapCheckCollectives());
}

LogicalResult mlir::overlap::checkModuleAnchor(
    OpPassManager &pm, llvm::StringRef pipeline,
    llvm::function_ref<LogicalResult(const llvm::Twine &)> errorHandler) {
  llvm::StringRef anchor = pm.getOpAnchorName();
  if (anchor == ModuleOp::getOperationName())
    return success();
  return errorHandler(pipeline + " runs on 'builtin.module', not nested in '" +
                      anchor + "': write --pass-pipeline='builtin.module(" +
                      pipeline + ")'");
}

void mlir::overlap::registerOverlapPipelines() {
  registerModulePipeline<OverlapPipelineOptions>(
      "overlap-pipeline",
      "Raise, reorder chains, plan and decompose: the tensor-level Overlap "
      "pipeline with its options forwarded",
      [](OpPassManager &pm, const OverlapPipelineOptions &options) {
        buildOverlapPipeline(pm, options);
        return llvm::Error::success();
      });
}

//===- Pipeline.cpp - The overlap-pipeline pass pipeline -----*- C++ -*-===//
//
// One flag for users: raise -> reorder-chains -> plan -> decompose, with the
// options of the passes forwarded, then every collective left unfused as
// one unsplit collective, and a check that no shard op is left that the
// later stages cannot lower.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::overlap;

void mlir::overlap::buildOverlapPipeline(OpPassManager &pm,
                                         const OverlapPipelineOptions &opts) {
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
  pm.addPass(createOverlapCheckCollectives());
}

void mlir::overlap::registerOverlapPipelines() {
  PassPipelineRegistration<OverlapPipelineOptions>(
      "overlap-pipeline",
      "Raise, reorder chains, plan and decompose: the tensor-level Overlap "
      "pipeline with its options forwarded",
      buildOverlapPipeline);
}

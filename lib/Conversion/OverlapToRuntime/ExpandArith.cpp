//===- ExpandArith.cpp - The arith expansions the host needs ----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// overlap-expand-arith (Passes.td): upstream's bf16 and ceil/floor division
// expansions, without its minimumf/maximumf expansion, which drops the sign
// of zero.
//
//===----------------------------------------------------------------------===//

#include "overlap/Conversion/Passes.h"

#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPEXPANDARITH
#include "overlap/Conversion/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;

namespace {
struct OverlapExpandArithPass
    : public overlap::impl::OverlapExpandArithBase<OverlapExpandArithPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateCeilFloorDivExpandOpsPatterns(patterns);
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

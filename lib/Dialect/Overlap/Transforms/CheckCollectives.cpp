//===- CheckCollectives.cpp - Refuse unlowered shard ops -----*- C++ -*-===//
//
// overlap-check-collectives: an error, with the reason, on every shard op
// on tensors that overlap-lower-collectives left for bufferization, which
// has no model for it.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"

#include "Raise.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPCHECKCOLLECTIVES
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

bool isOnTensors(Operation *op) {
  auto isTensor = [](Type type) { return isa<TensorType>(type); };
  return llvm::any_of(op->getOperandTypes(), isTensor) ||
         llvm::any_of(op->getResultTypes(), isTensor);
}

struct OverlapCheckCollectivesPass
    : public mlir::overlap::impl::OverlapCheckCollectivesBase<
          OverlapCheckCollectivesPass> {
  void runOnOperation() override {
    bool failedAny = false;
    SymbolTableCollection symbols;
    getOperation().walk([&](Operation *op) {
      if (!isa<shard::ShardDialect>(op->getDialect()) || !isOnTensors(op))
        return;
      failedAny = true;
      if (isa<shard::ShardOp>(op)) {
        op->emitOpError() << "is a sharding annotation, which Overlap does "
                             "not lower; partition the program first "
                             "(sharding-propagation, shard-partition)";
        return;
      }
      InFlightDiagnostic diag = op->emitOpError()
                                << "is not lowered by Overlap: ";
      if (std::string why = whyNotLowered(op, symbols); !why.empty())
        diag << why;
      else
        diag << "it would be; run overlap-lower-collectives (or "
                "overlap-pipeline) first";
    });
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace

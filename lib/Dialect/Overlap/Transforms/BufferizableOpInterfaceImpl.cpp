//===- BufferizableOpInterfaceImpl.cpp - Bufferize overlap ops -*- C++ -*-===//
//
// All-reduce works in place on its operand's buffer (the decomposed program
// reduces each tile where the matmul wrote it). Reduce-scatter and
// all-gather write their `into` destination's buffer, or a new buffer of the
// result's shape without one. A fused op that was
// never decomposed is rejected: bufferizing it would hide a whole matmul
// plus collective behind one op the runtime lowering does not know.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/BufferizableOpInterfaceImpl.h"
#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::overlap;

namespace {

struct AllReduceModel
    : public BufferizableOpInterface::ExternalModel<AllReduceModel,
                                                    AllReduceOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto ar = cast<AllReduceOp>(op);
    if (!ar.getResult())
      return success(); // Already on memrefs.
    FailureOr<Value> buffer = getBuffer(rewriter, ar.getInput(), options, state);
    if (failed(buffer))
      return failure();
    AllReduceOp::create(rewriter, op->getLoc(), Type(), *buffer,
                        ar.getGridAttr(), ar.getGridAxesAttr(),
                        ar.getReductionAttr());
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

/// Reduce-scatter and all-gather: read the input; write the `into`
/// destination's buffer (destination style) or, without one, a fresh
/// buffer.
template <typename OpTy>
struct IntoBufferModel
    : public BufferizableOpInterface::ExternalModel<IntoBufferModel<OpTy>,
                                                    OpTy> {
  static bool isInit(Operation *op, OpOperand &operand) {
    return operand.getOperandNumber() == 1 && cast<OpTy>(op).getInit();
  }
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    return !isInit(op, operand);
  }
  bool bufferizesToMemoryWrite(Operation *op, OpOperand &operand,
                               const AnalysisState &) const {
    return isInit(op, operand);
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    if (isInit(op, operand))
      return {{op->getResult(0), BufferRelation::Equivalent}};
    return {};
  }
  bool bufferizesToAllocation(Operation *op, Value) const {
    return !cast<OpTy>(op).getInit();
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto collective = cast<OpTy>(op);
    if (!collective.getResult())
      return success();
    FailureOr<Value> input =
        getBuffer(rewriter, collective.getInput(), options, state);
    if (failed(input))
      return failure();
    FailureOr<Value> dest;
    if (collective.getInit()) {
      dest = getBuffer(rewriter, collective.getInit(), options, state);
    } else {
      auto resultType =
          cast<RankedTensorType>(collective.getResult().getType());
      if (!resultType.hasStaticShape())
        return op->emitOpError()
               << "cannot be bufferized with a dynamic result shape";
      dest = options.createAlloc(
          rewriter, op->getLoc(),
          MemRefType::get(resultType.getShape(), resultType.getElementType()),
          ValueRange{});
    }
    if (failed(dest))
      return failure();
    if constexpr (std::is_same_v<OpTy, ReduceScatterOp>)
      ReduceScatterOp::create(rewriter, op->getLoc(), Type(), *input, *dest,
                              collective.getGridAttr(),
                              collective.getGridAxesAttr(),
                              collective.getReductionAttr());
    else
      AllGatherOp::create(rewriter, op->getLoc(), Type(), *input, *dest,
                          collective.getGridAttr(),
                          collective.getGridAxesAttr());
    replaceOpWithBufferizedValues(rewriter, op, *dest);
    return success();
  }
};

/// Fused ops must be decomposed first.
template <typename OpTy>
struct RejectFusedModel
    : public BufferizableOpInterface::ExternalModel<RejectFusedModel<OpTy>,
                                                    OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &,
                          const BufferizationOptions &,
                          BufferizationState &) const {
    return op->emitOpError()
           << "must be decomposed before bufferization: run overlap-plan "
              "and overlap-decompose (strategy=none keeps it as one tile)";
  }
};

} // namespace

void mlir::overlap::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, OverlapDialect *) {
    AllReduceOp::attachInterface<AllReduceModel>(*ctx);
    ReduceScatterOp::attachInterface<IntoBufferModel<ReduceScatterOp>>(
        *ctx);
    AllGatherOp::attachInterface<IntoBufferModel<AllGatherOp>>(*ctx);
    MatmulAllReduceOp::attachInterface<RejectFusedModel<MatmulAllReduceOp>>(
        *ctx);
    MatmulReduceScatterOp::attachInterface<
        RejectFusedModel<MatmulReduceScatterOp>>(*ctx);
    AllGatherMatmulOp::attachInterface<RejectFusedModel<AllGatherMatmulOp>>(
        *ctx);
  });
}

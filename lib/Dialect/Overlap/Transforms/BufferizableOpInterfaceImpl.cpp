//===- BufferizableOpInterfaceImpl.cpp - Bufferize overlap ops -*- C++ -*-===//
//
// All-reduce works in place on its operand's buffer (the decomposed program
// reduces each tile where the matmul wrote it). Reduce-scatter and
// all-gather write their `into` destination's buffer, or a new buffer of the
// result's shape without one; so does all-to-all, whose destination must
// not be its input. A fused op that was
// never decomposed is rejected: bufferizing it would hide a whole matmul
// plus collective behind one op the runtime lowering does not know.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/BufferizableOpInterfaceImpl.h"
#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

#include "PlannerBridge.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::overlap;

namespace {

/// Reads its operands; when `InPlace`, writes them too and the result is
/// the first one's buffer, otherwise aliases none of them.
template <typename ConcreteModel, typename OpTy, bool InPlace>
struct OperandsModel
    : public BufferizableOpInterface::ExternalModel<ConcreteModel, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return InPlace;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    if (InPlace)
      return {{op->getResult(0), BufferRelation::Equivalent}};
    return {};
  }
};
template <typename ConcreteModel, typename OpTy>
using InPlaceModel = OperandsModel<ConcreteModel, OpTy, true>;
template <typename ConcreteModel, typename OpTy>
using ReadOnlyModel = OperandsModel<ConcreteModel, OpTy, false>;

/// Destination style: writes the operand `ConcreteModel::isInit` picks, whose
/// buffer the result is.
template <typename ConcreteModel, typename OpTy>
struct DestinationModel
    : public BufferizableOpInterface::ExternalModel<ConcreteModel, OpTy> {
  bool bufferizesToMemoryWrite(Operation *op, OpOperand &operand,
                               const AnalysisState &) const {
    return ConcreteModel::isInit(op, operand);
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    if (ConcreteModel::isInit(op, operand))
      return {{op->getResult(0), BufferRelation::Equivalent}};
    return {};
  }
};

struct AllReduceModel : public InPlaceModel<AllReduceModel, AllReduceOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto ar = cast<AllReduceOp>(op);
    if (!ar.getResult())
      return success(); // Already on memrefs.
    FailureOr<Value> buffer =
        getBuffer(rewriter, ar.getInput(), options, state);
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
struct IntoBufferModel : public DestinationModel<IntoBufferModel<OpTy>, OpTy> {
  static bool isInit(Operation *op, OpOperand &operand) {
    return operand.getOperandNumber() == 1 && cast<OpTy>(op).getInit();
  }
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    return !isInit(op, operand);
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
      OpTy::create(rewriter, op->getLoc(), Type(), *input, *dest,
                   collective.getGridAttr(), collective.getGridAxesAttr());
    replaceOpWithBufferizedValues(rewriter, op, *dest);
    return success();
  }
};

/// `overlap.tiles`: the destination is read and written in place (the
/// result is its buffer); each body argument is a view of its slice, a
/// definition of its own for the analysis, like a function argument. The
/// analysis so sees each tile's ops with the tile's aliases only, instead of
/// every tile aliasing one chain of inserts into the destination (whose
/// read-after-write checks grow with the cube of the number of tiles).
/// That is sound because the slices are disjoint (verified) and the body
/// reaches the destination only through them: the op itself is the one
/// reader and writer of the destination the analysis has to order.
struct TilesModel : public InPlaceModel<TilesModel, TilesOp> {
  bool isWritable(Operation *, Value, const AnalysisState &) const {
    return true;
  }

  FailureOr<BufferLikeType>
  getBufferType(Operation *op, Value value, const BufferizationOptions &options,
                const BufferizationState &state,
                SmallVector<Value> &invocationStack) const {
    auto tiles = cast<TilesOp>(op);
    FailureOr<BufferLikeType> destType = bufferization::getBufferType(
        tiles.getDest(), options, state, invocationStack);
    auto arg = dyn_cast<BlockArgument>(value);
    if (failed(destType) || !arg)
      return destType;
    auto destMemRef = dyn_cast<MemRefType>(*destType);
    if (!destMemRef)
      return op->emitOpError()
             << "destination buffer type " << *destType << " is not a memref";
    unsigned i = arg.getArgNumber();
    SmallVector<int64_t> strides(destMemRef.getRank(), 1);
    return cast<BufferLikeType>(memref::SubViewOp::inferResultType(
        destMemRef, tiles.getTileOffsets(i), tiles.getTileSizes(i), strides));
  }

  /// A yielded value that the analysis did not keep in its slice's buffer
  /// (a copy somewhere in the tile, or another slice's value) is copied into
  /// the slice, so that bufferize() may take every slice's view as its
  /// final contents. All such values are copied out before any is copied
  /// in: a value may be another slice's old contents (a new allocation is
  /// not, and is placed without the copy out).
  LogicalResult resolveConflicts(Operation *op, RewriterBase &rewriter,
                                 const AnalysisState &analysisState,
                                 const BufferizationState &state) const {
    if (failed(
            cast<BufferizableOpInterface>(op).resolveTensorOpOperandConflicts(
                rewriter, analysisState, state)))
      return failure();
    auto tiles = cast<TilesOp>(op);
    YieldOp yield = tiles.getYield();
    rewriter.setInsertionPoint(yield);
    SmallVector<std::pair<OpOperand *, Value>> moved;
    for (OpOperand &operand : yield->getOpOperands()) {
      BlockArgument slice =
          tiles.getBodyBlock().getArgument(operand.getOperandNumber());
      if (analysisState.areEquivalentBufferizedValues(operand.get(), slice))
        continue;
      // A value that bufferizes to a new allocation (a collective without
      // a destination), or a reshape of one, is no slice's old contents:
      // it goes into its slice as it is, without a copy out first.
      Value source = operand.get();
      while (isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(
          source.getDefiningOp()))
        source = source.getDefiningOp()->getOperand(0);
      if (auto producer =
              analysisState.getOptions().dynCastBufferizableOp(source);
          producer && producer.bufferizesToAllocation(source)) {
        moved.push_back({&operand, operand.get()});
        continue;
      }
      FailureOr<Value> copy =
          allocateTensorForShapedValue(rewriter, yield.getLoc(), operand.get(),
                                       analysisState.getOptions(), state);
      if (failed(copy))
        return failure();
      moved.push_back({&operand, *copy});
    }
    for (auto [operand, copy] : moved) {
      BlockArgument slice =
          tiles.getBodyBlock().getArgument(operand->getOperandNumber());
      Value placed = MaterializeInDestinationOp::create(
                         rewriter, yield.getLoc(), copy, slice)
                         .getResult();
      rewriter.modifyOpInPlace(yield, [&]() { operand->set(placed); });
    }
    return success();
  }

  /// The body is already bufferized (the driver goes post-order): each
  /// slice's view of the destination's buffer replaces its argument, placed
  /// where the tile first uses it, and the body is inlined. The body's ops
  /// took their buffers of an argument through a `to_buffer` at the top of
  /// the body; those take the view directly.
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto tiles = cast<TilesOp>(op);
    FailureOr<Value> buffer =
        getBuffer(rewriter, tiles.getDest(), options, state);
    if (failed(buffer))
      return failure();
    Block &body = tiles.getBodyBlock();
    SmallVector<Value> views;
    for (BlockArgument arg : body.getArguments()) {
      SmallVector<Operation *> users(arg.getUsers());
      Operation *first = &body.back();
      auto use = [&](Operation *user) {
        Operation *inBody = body.findAncestorOpInBlock(*user);
        if (inBody->isBeforeInBlock(first))
          first = inBody;
      };
      for (Operation *user : users) {
        if (isa<ToBufferOp>(user))
          llvm::for_each(user->getUsers(), use);
        else
          use(user);
      }
      rewriter.setInsertionPoint(first);
      unsigned i = arg.getArgNumber();
      SmallVector<int64_t> strides(tiles.getTileSizes(i).size(), 1);
      Value view = memref::SubViewOp::create(rewriter, op->getLoc(), *buffer,
                                             tiles.getTileOffsets(i),
                                             tiles.getTileSizes(i), strides);
      auto tensor =
          ToTensorOp::create(rewriter, op->getLoc(), arg.getType(), view);
      for (Operation *user : users) {
        auto toBuffer = dyn_cast<ToBufferOp>(user);
        if (!toBuffer)
          continue;
        if (toBuffer.getType() == view.getType())
          rewriter.replaceOp(toBuffer, view);
        else
          rewriter.moveOpAfter(toBuffer, tensor);
      }
      views.push_back(tensor);
    }
    Operation *yield = body.getTerminator();
    rewriter.inlineBlockBefore(&body, op, views);
    rewriter.eraseOp(yield);
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

/// `overlap.yield` ends an `overlap.tiles` body: its values are the slices'
/// new contents, which resolveConflicts above keeps in the slices' buffers;
/// they alias nothing of the parent, and the parent's bufferize() erases it.
struct YieldModel : public ReadOnlyModel<YieldModel, YieldOp> {
  bool mustBufferizeInPlace(Operation *, OpOperand &,
                            const AnalysisState &) const {
    return true;
  }
  LogicalResult bufferize(Operation *, RewriterBase &,
                          const BufferizationOptions &,
                          BufferizationState &) const {
    return success();
  }
};

/// `overlap.gemm`: reads a and b; writes init in place (destination
/// style), reading it only when it accumulates, so an overwriting GEMM's
/// destination needs neither a copy nor a fill.
struct GemmModel : public DestinationModel<GemmModel, GemmOp> {
  static bool isInit(Operation *, OpOperand &operand) {
    return operand.getOperandNumber() == 2;
  }
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    return !isInit(op, operand) || cast<GemmOp>(op).getAccumulate();
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto gemm = cast<GemmOp>(op);
    if (!gemm.getResult())
      return success(); // Already on memrefs.
    SmallVector<Value> buffers;
    for (Value v : {gemm.getA(), gemm.getB(), gemm.getInit()}) {
      FailureOr<Value> buffer = getBuffer(rewriter, v, options, state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    GemmOp::create(rewriter, op->getLoc(), Type(), buffers[0], buffers[1],
                   buffers[2], gemm.getTransposeA(), gemm.getTransposeB(),
                   gemm.getAccumulate());
    replaceOpWithBufferizedValues(rewriter, op, buffers[2]);
    return success();
  }
};

/// Fused ops must be decomposed first.
template <typename OpTy>
struct RejectFusedModel : public ReadOnlyModel<RejectFusedModel<OpTy>, OpTy> {
  LogicalResult bufferize(Operation *op, RewriterBase &,
                          const BufferizationOptions &,
                          BufferizationState &) const {
    if (std::string dynamic = dynamicShapeOf(op); !dynamic.empty())
      return op->emitOpError()
             << "must be decomposed before bufferization, which needs "
                "static shapes: "
             << dynamic;
    // The usual reason the tensor stage left it whole: overlap-plan's
    // remark said so, but remarks are off by default.
    SymbolTableCollection symbols;
    if (!op->hasAttr(OverlapDialect::getPlanAttrName()) &&
        ShapedType::isDynamic(groupSizeOf(op, symbols)))
      return op->emitOpError()
             << "must be decomposed before bufferization, but was not "
                "planned: the group size of "
             << op->getAttr("grid")
             << " is not static (a grid with a dynamic shape); pass ranks=N "
                "(overlap-plan) to plan it anyway";
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
    ReduceScatterOp::attachInterface<IntoBufferModel<ReduceScatterOp>>(*ctx);
    AllGatherOp::attachInterface<IntoBufferModel<AllGatherOp>>(*ctx);
    AllToAllOp::attachInterface<IntoBufferModel<AllToAllOp>>(*ctx);
    TilesOp::attachInterface<TilesModel>(*ctx);
    YieldOp::attachInterface<YieldModel>(*ctx);
    GemmOp::attachInterface<GemmModel>(*ctx);
    MatmulAllReduceOp::attachInterface<RejectFusedModel<MatmulAllReduceOp>>(
        *ctx);
    MatmulReduceScatterOp::attachInterface<
        RejectFusedModel<MatmulReduceScatterOp>>(*ctx);
    AllGatherMatmulOp::attachInterface<RejectFusedModel<AllGatherMatmulOp>>(
        *ctx);
    AllToAllMatmulOp::attachInterface<RejectFusedModel<AllToAllMatmulOp>>(*ctx);
    MatmulAllToAllOp::attachInterface<RejectFusedModel<MatmulAllToAllOp>>(*ctx);
  });
}

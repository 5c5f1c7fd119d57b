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
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"

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
    else if constexpr (std::is_same_v<OpTy, ShiftOp>)
      ShiftOp::create(rewriter, op->getLoc(), Type(), *input, *dest,
                      collective.getGridAttr(), collective.getGridAxesAttr(),
                      collective.getOffsetAttr(),
                      collective.getWithNextAttr());
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
      SmallVector<OpFoldResult> sizes, strides;
      for (int64_t size : tiles.getTileSizes(i)) {
        sizes.push_back(rewriter.getIndexAttr(size));
        strides.push_back(rewriter.getIndexAttr(1));
      }
      Value view = memref::SubViewOp::create(rewriter, op->getLoc(), *buffer,
                                             tiles.getMixedTileOffsets(i),
                                             sizes, strides);
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

//===----------------------------------------------------------------------===//
// scf.for: its init reads and its iter_arg buffer types, in polynomial time
//===----------------------------------------------------------------------===//
//
// Upstream's scf.for model (MLIR 22) makes the one-shot bufferization of k
// nested loops with a tensor iter_arg take time exponential in k (20 loops
// 2.7 s, 22 loops 11 s, 24 loops over a minute), twice over:
//
// - bufferizesToMemoryRead of an init operand is AnalysisState::isValueRead
//   of the tied iter_arg, which asks each use of that value twice
//   (bufferizesToAliasOnly, then bufferizesToMemoryRead); when the use is
//   the init of a nested scf.for, both questions come back here for the
//   inner iter_arg: 2^k calls (the analysis of func arguments and of each
//   in-place decision).
// - getBufferType of an iter_arg is the type of its init and of its yielded
//   value; the yielded value of an outer loop is the result of the inner
//   one, whose init is the outer iter_arg again, and a value is evaluated
//   anew (not looked up) each time the recursion meets it, cut only when it
//   is on the invocation stack twice: about 2^k calls per query (in
//   bufferizeOp, once per loop and per value that asks).
//
// Both are memoized for the duration of one outermost query, so each value
// is evaluated once per query; the IR and the analysis do not change during
// a query, and nothing is kept between queries. The answers are upstream's:
// these wrap the model's functions, they do not replace the model.
// - A read answer depends only on the IR and the analysis state: memoizing
//   it is exact.
// - A buffer type can depend on the invocation stack where it is cut (the
//   cut takes the init's type where a longer recursion might have found a
//   layout mismatch and a fully dynamic layout). So the memoized answer is
//   kept only when it is consistent: every iter_arg it typed has the type
//   of its init and of its yielded value. Then upstream's recursion finds
//   the same type at every value whatever the stack (each cut returns the
//   init's type, which is the consistent one, and each full evaluation
//   finds init and yield equal), so the answer is upstream's. Otherwise
//   (layouts that differ around a loop, or an scf.while, whose own cut this
//   does not see, in the function) the query is asked again of upstream's
//   model unmemoized.

using ReadFn = bool (*)(const BufferizableOpInterface::Concept *, Operation *,
                        OpOperand &, const AnalysisState &);

/// Upstream's scf.for bufferizesToMemoryRead (the same function in every
/// context: it lives in libMLIR).
static ReadFn upstreamForOpRead = nullptr;

struct ForReadMemo {
  unsigned depth = 0;
  llvm::DenseMap<std::pair<const AnalysisState *, OpOperand *>, bool> known;
};
static thread_local ForReadMemo forReadMemo;

static bool memoizedForOpRead(const BufferizableOpInterface::Concept *impl,
                              Operation *op, OpOperand &operand,
                              const AnalysisState &state) {
  ForReadMemo &memo = forReadMemo;
  auto key = std::make_pair(&state, &operand);
  if (memo.depth > 0)
    if (auto it = memo.known.find(key); it != memo.known.end())
      return it->second;
  ++memo.depth;
  bool read = upstreamForOpRead(impl, op, operand, state);
  --memo.depth;
  if (memo.depth > 0)
    memo.known[key] = read;
  else
    memo.known.clear();
  return read;
}

using TypeFn = FailureOr<BufferLikeType> (*)(
    const BufferizableOpInterface::Concept *, Operation *, Value,
    const BufferizationOptions &, const BufferizationState &,
    SmallVector<Value> &);

/// Upstream's scf.for getBufferType.
static TypeFn upstreamForOpType = nullptr;

struct ForTypeMemo {
  unsigned depth = 0;
  /// Asking upstream's model unmemoized (the memoized answer was not
  /// consistent).
  bool exact = false;
  llvm::DenseMap<Value, BufferLikeType> known;
  /// The keys of `known` in insertion order.
  SmallVector<Value> order;
};
static thread_local ForTypeMemo forTypeMemo;

/// Whether every scf.for iter_arg typed so far has the type of its init and
/// of its yielded value. Asks for those types with the memo still on (new
/// values it types are checked too).
static bool isConsistent(ForTypeMemo &memo, const BufferizationOptions &options,
                         const BufferizationState &state) {
  for (size_t i = 0; i < memo.order.size(); ++i) {
    auto iterArg = dyn_cast<BlockArgument>(memo.order[i]);
    if (!iterArg)
      continue; // A result: the type of its iter_arg.
    auto forOp = dyn_cast<scf::ForOp>(iterArg.getOwner()->getParentOp());
    if (!forOp)
      return false;
    BufferLikeType type = memo.known.lookup(iterArg);
    Value init = forOp.getTiedLoopInit(iterArg)->get();
    FailureOr<BufferLikeType> initType =
        isa<TensorLikeType>(init.getType())
            ? bufferization::getBufferType(init, options, state)
            : FailureOr<BufferLikeType>(dyn_cast<BufferLikeType>(init.getType()));
    if (failed(initType) || *initType != type)
      return false;
    Value yielded = forOp.getTiedLoopYieldedValue(iterArg)->get();
    FailureOr<BufferLikeType> yieldedType =
        isa<TensorLikeType>(yielded.getType())
            ? bufferization::getBufferType(yielded, options, state)
            : FailureOr<BufferLikeType>(
                  dyn_cast<BufferLikeType>(yielded.getType()));
    if (failed(yieldedType) || *yieldedType != type)
      return false;
  }
  return true;
}

static FailureOr<BufferLikeType>
memoizedForOpType(const BufferizableOpInterface::Concept *impl, Operation *op,
                  Value value, const BufferizationOptions &options,
                  const BufferizationState &state,
                  SmallVector<Value> &invocationStack) {
  ForTypeMemo &memo = forTypeMemo;
  if (memo.exact)
    return upstreamForOpType(impl, op, value, options, state, invocationStack);
  if (memo.depth > 0) {
    if (auto it = memo.known.find(value); it != memo.known.end())
      return it->second;
    ++memo.depth;
    FailureOr<BufferLikeType> type =
        upstreamForOpType(impl, op, value, options, state, invocationStack);
    --memo.depth;
    if (succeeded(type) && memo.known.try_emplace(value, *type).second)
      memo.order.push_back(value);
    return type;
  }
  // The outermost query. An scf.while in the function: upstream's model as
  // it is (see above).
  auto func = op->getParentOfType<FunctionOpInterface>();
  bool hasWhile =
      !func || func->walk([](scf::WhileOp) { return WalkResult::interrupt(); })
                   .wasInterrupted();
  if (hasWhile)
    return upstreamForOpType(impl, op, value, options, state, invocationStack);
  ++memo.depth;
  FailureOr<BufferLikeType> type =
      upstreamForOpType(impl, op, value, options, state, invocationStack);
  bool consistent = succeeded(type);
  if (consistent) {
    if (memo.known.try_emplace(value, *type).second)
      memo.order.push_back(value);
    consistent = isConsistent(memo, options, state);
  }
  --memo.depth;
  memo.known.clear();
  memo.order.clear();
  // A failure has emitted its error: not asked again.
  if (failed(type) || consistent)
    return type;
  memo.exact = true;
  type = upstreamForOpType(impl, op, value, options, state, invocationStack);
  memo.exact = false;
  return type;
}

/// Wraps the scf.for model's bufferizesToMemoryRead and getBufferType once
/// upstream's model is attached (registerInterfaceModels registers scf's models first; with
/// no scf model, e.g. in a tool that registers only ours, nothing changes).
static void wrapForOpRead(MLIRContext *ctx) {
  std::optional<RegisteredOperationName> name =
      RegisteredOperationName::lookup(TypeID::get<scf::ForOp>(), ctx);
  if (!name)
    return;
  auto *concept_ = name->getInterface<BufferizableOpInterface>();
  if (!concept_ || concept_->bufferizesToMemoryRead == &memoizedForOpRead)
    return;
  upstreamForOpRead = concept_->bufferizesToMemoryRead;
  concept_->bufferizesToMemoryRead = &memoizedForOpRead;
  upstreamForOpType = concept_->getBufferType;
  concept_->getBufferType = &memoizedForOpType;
}

} // namespace

void mlir::overlap::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, OverlapDialect *) {
    AllReduceOp::attachInterface<AllReduceModel>(*ctx);
    ReduceScatterOp::attachInterface<IntoBufferModel<ReduceScatterOp>>(*ctx);
    AllGatherOp::attachInterface<IntoBufferModel<AllGatherOp>>(*ctx);
    AllToAllOp::attachInterface<IntoBufferModel<AllToAllOp>>(*ctx);
    ShiftOp::attachInterface<IntoBufferModel<ShiftOp>>(*ctx);
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
  registry.addExtension(
      +[](MLIRContext *ctx, scf::SCFDialect *) { wrapForOpRead(ctx); });
}

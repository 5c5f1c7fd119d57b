//===- OverlapToRuntime.cpp - Lower to the Overlap runtime ABI -*- C++ -*-===//
//
// convert-overlap-to-runtime: the scheduled memref program becomes calls of
// overlap_runtime.h. The runtime owns the streams; this pass only decides
// what is enqueued on which stream and in which order.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"
#include "ConcurrentOrder.h"
#include "RuntimeBuilder.h"

#include "overlap/Conversion/Passes.h"
#include "overlap/Conversion/RuntimeCalls.h"
#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_CONVERTOVERLAPTORUNTIME
#include "overlap/Conversion/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;
using namespace mlir::overlap::runtime_lowering;

namespace {

/// True for an op that reads or writes a memref's elements (views,
/// allocations and pure ops do not).
bool touchesMemory(Operation *op) {
  if (isa<linalg::LinalgOp, memref::LoadOp, memref::StoreOp, memref::CopyOp>(
          op))
    return true;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::any_of(list, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()) &&
           e.getValue() && isa<MemRefType>(e.getValue().getType());
  });
}

/// The runtime stream index of an `overlap.stream`: compute and comm by
/// name, any other by its position in the region.
int32_t streamIndex(StreamOp stream) {
  if (stream.getName() == "compute")
    return kComputeStream;
  if (stream.getName() == "comm")
    return kCommStream;
  int32_t index = 0;
  for (Operation &op : stream->getBlock()->getOperations()) {
    if (&op == stream.getOperation())
      break;
    if (isa<StreamOp>(op))
      ++index;
  }
  return index;
}

/// The stream whose region holds `op`, if any.
std::optional<int32_t> enclosingStream(Operation *op) {
  if (auto stream = op->getParentOfType<StreamOp>())
    return streamIndex(stream);
  return std::nullopt;
}

/// target=cuda: `op` would touch device memory from the host.
LogicalResult emitHostAccessError(Operation *op) {
  InFlightDiagnostic diag =
      op->emitOpError() << "would run on the host, but with target=cuda its "
                           "buffers are device memory";
  if (isa<linalg::LinalgOp>(op))
    diag << " (overlap-linalg-to-gpu turns linalg ops into kernels; run it "
            "and gpu-kernel-outlining before this pass)";
  return diag;
}

class Lowering {
public:
  Lowering(RuntimeBuilder &rt, SymbolTableCollection &symbols, bool cuda)
      : rt(rt), symbols(symbols), cuda(cuda) {}

  /// Lowers one op enqueued on `stream`; returns false when the op is not a
  /// runtime op (it then runs inline).
  FailureOr<bool> lower(Operation *op, int32_t stream) {
    Location loc = op->getLoc();
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op))
      return launchKernel(launch, stream);
    if (!lowersToRuntimeCall(op))
      return false;
    if (auto mm = dyn_cast<linalg::MatmulOp>(op))
      return gemm(op, stream, mm.getInputs()[0], mm.getInputs()[1],
                  mm.getOutputs()[0], /*batched=*/false, /*flags=*/0);
    if (auto bm = dyn_cast<linalg::BatchMatmulOp>(op))
      return gemm(op, stream, bm.getInputs()[0], bm.getInputs()[1],
                  bm.getOutputs()[0], /*batched=*/true, /*flags=*/0);
    if (auto g = dyn_cast<GemmOp>(op))
      return gemm(op, stream, g.getA(), g.getB(), g.getInit(), g.isBatched(),
                  (g.getTransposeA() ? OVERLAP_GEMM_TRANSPOSE_A : 0) |
                      (g.getTransposeB() ? OVERLAP_GEMM_TRANSPOSE_B : 0) |
                      (g.getAccumulate() ? 0 : OVERLAP_GEMM_OVERWRITE));
    if (auto ar = dyn_cast<AllReduceOp>(op))
      return collective(op, stream, RuntimeFn::overlap_all_reduce,
                        ar.getInput(), ar.getInput(), ar.getReduction(),
                        numElements(rt, loc, ar.getInput()));
    if (auto rs = dyn_cast<ReduceScatterOp>(op))
      return collective(op, stream, RuntimeFn::overlap_reduce_scatter,
                        rs.getInput(), rs.getInit(), rs.getReduction(),
                        numElements(rt, loc, rs.getInit()));
    if (auto ag = dyn_cast<AllGatherOp>(op))
      return collective(op, stream, RuntimeFn::overlap_all_gather,
                        ag.getInput(), ag.getInit(), std::nullopt,
                        numElements(rt, loc, ag.getInput()));
    if (auto a2a = dyn_cast<AllToAllOp>(op)) {
      // The runtime's count is per peer: one of the G blocks (a dynamic
      // size was checked to divide where it was cut, overlap-lower-
      // collectives).
      int64_t group = groupSizeOf(op, symbols);
      auto type = cast<MemRefType>(a2a.getInput().getType());
      if (!ShapedType::isDynamic(group) && type.hasStaticShape() &&
          type.getNumElements() % group != 0)
        return op->emitOpError()
               << "cannot be lowered to overlap_all_to_all: the group size "
               << group << " does not divide the input into equal blocks";
      Value count;
      if (!ShapedType::isDynamic(group) && type.hasStaticShape()) {
        count = rt.i64(loc, type.getNumElements() / group);
      } else {
        // On a grid with dynamic extents the group's size at run time.
        Value size = rt.i64(loc, group);
        if (ShapedType::isDynamic(group)) {
          FailureOr<Value> g = groups.get(rt, op, symbols);
          if (failed(g))
            return failure();
          size = arith::ExtSIOp::create(
              builder(), loc, builder().getI64Type(),
              rt.call(loc, RuntimeFn::overlap_group_size, *g));
        }
        count = arith::DivUIOp::create(
            builder(), loc, numElements(rt, loc, a2a.getInput()), size);
      }
      return collective(op, stream, RuntimeFn::overlap_all_to_all,
                        a2a.getInput(), a2a.getInit(), std::nullopt, count);
    }
    if (auto shift = dyn_cast<ShiftOp>(op))
      return lowerShift(shift, stream);
    if (auto sig = dyn_cast<SignalOp>(op)) {
      // Inside a fused group the shifts run at its end: a signal waits.
      if (fusing.contains(stream))
        fusing[stream].push_back({sig.getSignals(), sig.getIndex()});
      else
        signal(loc, stream, sig.getSignals(), sig.getIndex());
      return true;
    }
    if (auto wait = dyn_cast<WaitOp>(op)) {
      rt.status(loc, RuntimeFn::overlap_wait,
                {rt.ctx, rt.i32(loc, stream), signals.lookup(wait.getSignals()),
                 rt.i32(loc, wait.getIndex())});
      return true;
    }
    if (auto copy = dyn_cast<memref::CopyOp>(op))
      return this->copy(stream, loc, copy.getSource(), copy.getTarget());
    if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      // A fill whose element bytes are all equal (lowersToRuntimeCall):
      // one memset of the contiguous buffer.
      Value dst = fill.getOutputs()[0];
      auto type = cast<MemRefType>(dst.getType());
      Value bytes =
          type.hasStaticShape()
              ? rt.i64(loc, type.getNumElements() * elementBytes(type))
              : arith::MulIOp::create(builder(), loc, numElements(rt, loc, dst),
                                      rt.i64(loc, elementBytes(type)))
                    .getResult();
      rt.status(loc, RuntimeFn::overlap_memset,
                {rt.ctx, rt.i32(loc, stream), rt.i64(loc, rt.nextTile()),
                 rt.buffer(loc, dst).ptr, rt.i32(loc, *memsetByte(fill)),
                 bytes});
      return true;
    }
    if (auto copy = dyn_cast<linalg::CopyOp>(op))
      return this->copy(stream, loc, copy.getInputs()[0], copy.getOutputs()[0]);
    return false;
  }

  OpBuilder &builder() { return rt.builder(); }

  /// target=cuda: kernels and runtime calls nested in host control flow
  /// (the scf.if that shard-partition puts around an accumulator's fill,
  /// the clone that buffer deallocation puts in a branch) are enqueued on
  /// `stream` (outside a concurrent region: comm for collectives, compute
  /// otherwise, then joined like the other work there).
  LogicalResult lowerNested(Operation *root, std::optional<int32_t> stream) {
    SmallVector<Operation *> nested;
    root->walk([&](Operation *op) {
      if (op == root || isa<SignalOp, WaitOp>(op))
        return;
      if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
        if (launch.getAsyncDependencies().empty())
          nested.push_back(op);
      } else if (lowersToRuntimeCall(op)) {
        nested.push_back(op);
      }
    });
    OpBuilder::InsertionGuard guard(rt.builder());
    for (Operation *op : nested) {
      int32_t s = stream                 ? *stream
                  : isTileCollective(op) ? kCommStream
                                         : kComputeStream;
      rt.builder().setInsertionPoint(op);
      FailureOr<bool> lowered = lower(op, s);
      if (failed(lowered))
        return failure();
      if (!*lowered)
        continue;
      // Inside a stream, the stream's order is the program's; outside, the
      // op is joined like every other sequential op.
      if (!stream)
        sequence(op->getLoc(), s);
      op->erase();
    }
    return success();
  }

  void declareSignals(SignalsOp op, int64_t key) {
    OpBuilder &b = rt.builder();
    Location loc = op.getLoc();
    Value slot;
    {
      // At the function's entry: a set declared in a loop body (a scan)
      // must not grow the stack on every iteration.
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          &op->getParentOfType<func::FuncOp>().getBody().front());
      Value one = rt.i64(loc, 1);
      slot = LLVM::AllocaOp::create(b, loc, rt.ptr(), rt.ptr(), one);
    }
    rt.status(loc, RuntimeFn::overlap_signals_acquire,
              {rt.ctx, rt.i64(loc, key),
               rt.i32(loc, op.getSignals().getType().getCount()), slot});
    signals[op.getSignals()] = LLVM::LoadOp::create(b, loc, rt.ptr(), slot);
  }

  void synchronize(Location loc, std::optional<int32_t> stream) {
    if (stream)
      rt.status(loc, RuntimeFn::overlap_stream_synchronize,
                {rt.ctx, rt.i32(loc, *stream)});
    else
      rt.status(loc, RuntimeFn::overlap_context_synchronize, {rt.ctx});
  }

  /// Keeps the program sequential after work enqueued on `stream` (none:
  /// on every stream): the host waits for it where the host runs the next
  /// ops (target=host); on a device the streams are joined instead, so the
  /// host goes on enqueueing (overlap_streams_join).
  void sequence(Location loc, std::optional<int32_t> stream) {
    if (cuda)
      rt.status(loc, RuntimeFn::overlap_streams_join, {rt.ctx});
    else
      synchronize(loc, stream);
  }

  /// target=cuda: the results must be complete when the entry returns.
  void synchronizeBeforeReturns(func::FuncOp func) {
    OpBuilder &b = rt.builder();
    func.walk([&](func::ReturnOp ret) {
      b.setInsertionPoint(ret);
      synchronize(ret.getLoc(), std::nullopt);
    });
  }

  /// target=cuda: kernels and allocations go to the context's device, not
  /// to whichever device is current on the calling thread.
  void makeDeviceCurrent(Location loc) {
    Value status = rt.call(loc, RuntimeFn::overlap_cuda_make_current, {rt.ctx});
    assertSuccess(loc, status,
                  "overlap_cuda_make_current: cannot make the context's "
                  "device current");
    // Process groups come after: NCCL's splits run on the context's device.
    groups.startAfter(&*std::prev(rt.builder().getInsertionPoint()));
  }

  /// Stops the program (cf.assert) with `message` unless `status` is
  /// OVERLAP_SUCCESS: for calls whose failure must not reach a kernel.
  void assertSuccess(Location loc, Value status, const Twine &message) {
    OpBuilder &b = rt.builder();
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, status,
                                     rt.i32(loc, 0));
    cf::AssertOp::create(b, loc, ok, message.str());
  }

  /// An op the runtime does not provide, run on the host thread.
  LogicalResult inlineOp(Operation *op, std::optional<int32_t> stream) {
    if (cuda && touchesMemory(op))
      return emitHostAccessError(op);
    if (cuda && failed(lowerNested(op, stream)))
      return failure();
    // Only an op with effects must see what its stream has done so far;
    // constants, index arithmetic and views need no synchronize. With
    // target=cuda nothing inlined touches memory (checked above) and what
    // it nests is enqueued in its stream's order.
    if (!cuda && stream && !isMemoryEffectFree(op))
      synchronize(op->getLoc(), stream);
    OpBuilder &b = rt.builder();
    op->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
    return success();
  }

  /// target=cuda: device memory for the function's buffers; the host
  /// constants it reads (memref.get_global) are copied to device memory at
  /// the point they are taken and freed before every return.
  LogicalResult lowerDeviceMemory(func::FuncOp func) {
    SmallVector<memref::AllocOp> allocs;
    SmallVector<memref::DeallocOp> deallocs;
    SmallVector<memref::GetGlobalOp> globals;
    WalkResult walk = func.walk([&](Operation *op) {
      if (auto alloc = dyn_cast<memref::AllocOp>(op))
        allocs.push_back(alloc);
      else if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
        deallocs.push_back(dealloc);
      else if (auto global = dyn_cast<memref::GetGlobalOp>(op))
        globals.push_back(global);
      else if (isa<memref::AllocaOp>(op)) {
        op->emitOpError() << "is a buffer on the host stack, which kernels "
                             "and the CUDA runtime cannot use "
                             "(target=cuda)";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    OpBuilder &b = rt.builder();
    for (memref::AllocOp alloc : allocs) {
      // (Device allocations are 256-byte aligned.)
      std::optional<uint64_t> alignment = alloc.getAlignment();
      if (alignment && *alignment > 256)
        return alloc.emitOpError()
               << "asks for an alignment of " << *alignment
               << " bytes; device allocations (target=cuda) give 256";
      b.setInsertionPoint(alloc);
      FailureOr<Value> buffer =
          deviceAlloc(alloc, alloc.getType(), enclosingStream(alloc),
                      alloc.getDynamicSizes());
      if (failed(buffer))
        return failure();
      alloc.replaceAllUsesWith(*buffer);
      alloc.erase();
    }
    SmallVector<Value> copies;
    for (memref::GetGlobalOp global : globals) {
      if (global->getParentOp() != func.getOperation())
        return global.emitOpError()
               << "takes a host constant inside control flow; target=cuda "
                  "copies constants to the device only at the function's "
                  "top level";
      b.setInsertionPointAfter(global);
      FailureOr<Value> buffer =
          deviceAlloc(global, global.getType(), std::nullopt);
      if (failed(buffer))
        return failure();
      Location loc = global.getLoc();
      global.getResult().replaceAllUsesWith(*buffer);
      // Both sides are contiguous: copy() makes it one overlap_memcpy. A
      // copy it cannot make would leave the kernels reading memory nobody
      // wrote (a rank-0 constant once did: every JAX layer's output was
      // NaN on the GPU), so that is an error, never a silent skip.
      FailureOr<bool> copied =
          copy(kComputeStream, loc, global.getResult(), *buffer);
      if (failed(copied))
        return failure();
      if (!*copied)
        return global.emitOpError()
               << "cannot be copied to device memory (target=cuda): "
               << global.getType() << " is not a contiguous buffer of "
               << "byte-sized elements";
      sequence(loc, kComputeStream);
      copies.push_back(*buffer);
    }
    func.walk([&](func::ReturnOp ret) {
      b.setInsertionPoint(ret);
      for (Value copy : copies)
        freeBuffer(ret.getLoc(), copy, std::nullopt);
    });
    for (memref::DeallocOp dealloc : deallocs) {
      b.setInsertionPoint(dealloc);
      freeBuffer(dealloc.getLoc(), dealloc.getMemref(),
                 enclosingStream(dealloc));
      dealloc.erase();
    }
    return success();
  }

  /// target=cuda: the function refuses a context that is not a CUDA one
  /// (its kernels would otherwise go to the legacy default stream).
  void checkCudaContext(Location loc) {
    OpBuilder &b = rt.builder();
    Value stream = rt.call(loc, RuntimeFn::overlap_cuda_stream,
                           {rt.ctx, rt.i32(loc, kComputeStream)});
    Value null = LLVM::ZeroOp::create(b, loc, rt.ptr());
    Value ok =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, stream, null);
    cf::AssertOp::create(b, loc, ok,
                         "this program was compiled with target=cuda and "
                         "needs a CUDA context (overlap_cuda_context_create*)");
  }

private:
  /// overlap_alloc_async of a buffer of `type` for `op`, at the insertion
  /// point: stream-ordered on `stream`, or usable on every stream (none).
  /// `dynamicSizes` are the index values of the dynamic dims of `type`, in
  /// order (memref.alloc's operands).
  FailureOr<Value> deviceAlloc(Operation *op, MemRefType type,
                               std::optional<int32_t> stream,
                               ValueRange dynamicSizes = {}) {
    if (!type.getLayout().isIdentity() || !hasByteSizedElements(type) ||
        type.getMemorySpace() ||
        dynamicSizes.size() != static_cast<size_t>(type.getNumDynamicDims()))
      return op->emitOpError()
             << "cannot be lowered for target=cuda: device buffers need an "
                "identity layout, the default memory space, integer or float "
                "elements of whole bytes (i1: one byte) and their dynamic "
                "sizes, got "
             << type;
    OpBuilder &b = rt.builder();
    Location loc = op->getLoc();
    // The sizes as i64, and the bytes: constants, or their product at run
    // time.
    SmallVector<Value> sizes;
    for (int64_t d = 0, dyn = 0; d < type.getRank(); ++d)
      sizes.push_back(type.isDynamicDim(d)
                          ? rt.indexToI64(loc, dynamicSizes[dyn++])
                          : rt.i64(loc, type.getDimSize(d)));
    std::string what =
        type.hasStaticShape()
            ? std::to_string(type.getNumElements() * elementBytes(type)) +
                  " bytes of device memory for "
            : std::string("device memory (sizes known at run time) for ");
    Value bytes = rt.i64(loc, elementBytes(type));
    if (type.hasStaticShape())
      bytes = rt.i64(loc, type.getNumElements() * elementBytes(type));
    else
      for (Value size : sizes)
        bytes = arith::MulIOp::create(b, loc, bytes, size);
    Value slot =
        LLVM::AllocaOp::create(b, loc, rt.ptr(), rt.ptr(), rt.i64(loc, 1));
    Value status =
        rt.call(loc, RuntimeFn::overlap_alloc_async,
                {rt.ctx, rt.i32(loc, stream ? *stream : -1), bytes, slot});
    // A failed allocation must not reach a kernel (a fault there poisons
    // the CUDA context): stop here, naming the size.
    assertSuccess(loc, status,
                  "overlap_alloc_async: cannot allocate " + what +
                      llvm::formatv("{0}", type).str());
    Value ptr = LLVM::LoadOp::create(b, loc, rt.ptr(), slot);
    return memrefFromPointer(rt, loc, ptr, type, sizes);
  }

  /// overlap_free_async of the allocation behind `memref`, after the work
  /// enqueued so far on `stream` (none: on every stream).
  void freeBuffer(Location loc, Value memref, std::optional<int32_t> stream) {
    OpBuilder &b = rt.builder();
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    Value ptr =
        LLVM::IntToPtrOp::create(b, loc, rt.ptr(), rt.indexToI64(loc, base));
    rt.status(loc, RuntimeFn::overlap_free_async,
              {rt.ctx, rt.i32(loc, stream ? *stream : -1), ptr});
  }

  /// A kernel of overlap-linalg-to-gpu, launched on the CUDA stream behind
  /// `stream` instead of the fresh, synchronized stream gpu-to-llvm would
  /// make: an async dependency on that stream (gpu-to-llvm passes it to
  /// mgpuLaunchKernel and does not synchronize).
  FailureOr<bool> launchKernel(gpu::LaunchFuncOp launch, int32_t stream) {
    if (!cuda)
      return launch.emitOpError()
             << "launches a GPU kernel, which needs target=cuda";
    if (!launch.getAsyncDependencies().empty() || launch.getAsyncObject())
      return launch.emitOpError()
             << "already names its stream; convert-overlap-to-runtime "
                "launches kernels on the streams it schedules";
    OpBuilder &b = rt.builder();
    Location loc = launch.getLoc();
    Value cudaStream = rt.call(loc, RuntimeFn::overlap_cuda_stream,
                               {rt.ctx, rt.i32(loc, stream)});
    auto tokenType = gpu::AsyncTokenType::get(b.getContext());
    Value token = UnrealizedConversionCastOp::create(
                      b, loc, TypeRange{tokenType}, ValueRange{cudaStream})
                      .getResult(0);
    std::optional<gpu::KernelDim3> cluster;
    if (launch.hasClusterSize())
      cluster = launch.getClusterSizeOperandValues();
    gpu::LaunchFuncOp::create(
        b, loc, launch.getKernelAttr(), launch.getGridSizeOperandValues(),
        launch.getBlockSizeOperandValues(), launch.getDynamicSharedMemorySize(),
        launch.getKernelOperands(), tokenType, ValueRange{token}, cluster);
    return true;
  }

  /// One overlap_gemm; `flags` are its OVERLAP_GEMM_* bits (a transposed
  /// operand is stored transposed: its leading dimension is its rows').
  FailureOr<bool> gemm(Operation *op, int32_t stream, Value a, Value bm,
                       Value c, bool batched, int32_t flags) {
    Location loc = op->getLoc();
    auto aType = cast<MemRefType>(a.getType());
    auto bType = cast<MemRefType>(bm.getType());
    auto cType = cast<MemRefType>(c.getType());
    std::optional<int32_t> abDType = runtimeDType(aType.getElementType());
    std::optional<int32_t> cDType = runtimeDType(cType.getElementType());
    if (!abDType || !cDType || !isGemmElementType(aType.getElementType()) ||
        !isGemmElementType(cType.getElementType()) ||
        bType.getElementType() != aType.getElementType() ||
        !aType.hasStaticShape() || !bType.hasStaticShape() ||
        !cType.hasStaticShape())
      return op->emitOpError()
             << "cannot be lowered to overlap_gemm: it needs static shapes "
                "and f32/f16/bf16 element types";
    for (Value v : {a, bm, c}) {
      Layout unit = unitInnerStride(v);
      if (unit == Layout::No)
        return op->emitOpError()
               << "cannot be lowered to overlap_gemm: operand " << v.getType()
               << " has no unit innermost stride";
      if (unit == Layout::AtRunTime)
        rt.assertLayout(loc, v, /*innerOnly=*/true,
                        "overlap_gemm: an operand's rows are not contiguous "
                        "(innermost stride != 1)");
    }
    int64_t batch = batched ? cType.getDimSize(0) : 1;
    int64_t m = cType.getDimSize(batched ? 1 : 0);
    int64_t n = cType.getDimSize(batched ? 2 : 1);
    int64_t k = aType.getDimSize(aType.getRank() -
                                 ((flags & OVERLAP_GEMM_TRANSPOSE_A) ? 2 : 1));
    RuntimeBuilder::Buffer ab = rt.buffer(loc, a), bb = rt.buffer(loc, bm),
                           cb = rt.buffer(loc, c);
    Value zero = rt.i64(loc, 0);
    // Batched: A and C are (batch, rows, cols); B is one matrix (stride 0).
    Value lda = ab.strides[batched ? 1 : 0],
          sa = batched ? ab.strides[0] : zero;
    // B is one matrix for every batch (stride 0) or a batch of its own.
    bool batchedB = bType.getRank() == 3;
    Value ldb = bb.strides[batchedB ? 1 : 0],
          sb = batchedB ? bb.strides[0] : zero;
    Value ldc = cb.strides[batched ? 1 : 0],
          sc = batched ? cb.strides[0] : zero;
    // The tile argument says whether communication may be in flight: a
    // GEMM of a concurrent region that a collective of the region can run
    // beside gets its tile index (the CUDA backend then leaves the
    // communication's SMs free); any other gets -1 and every SM: one
    // outside a region, and one that the region's flags order before or
    // after every collective (a one-tile op, several one-tile ops of a
    // --strategy=none program sharing a region).
    auto region = op->getParentOfType<ConcurrentOp>();
    int64_t tile = region ? rt.nextTile() : -1;
    if (region && alone.contains(op))
      tile = -1;
    rt.status(loc, RuntimeFn::overlap_gemm,
              {rt.ctx, rt.i32(loc, stream), rt.i64(loc, tile),
               rt.i64(loc, batch), rt.i64(loc, m), rt.i64(loc, n),
               rt.i64(loc, k), rt.i32(loc, *abDType), ab.ptr, lda, sa, bb.ptr,
               ldb, sb, rt.i32(loc, *cDType), cb.ptr, ldc, sc,
               rt.i32(loc, flags)});
    return true;
  }

  FailureOr<bool> collective(Operation *op, int32_t stream, RuntimeFn fn,
                             Value src, Value dst,
                             std::optional<ReductionKind> reduction,
                             Value count, Value offset = Value()) {
    Location loc = op->getLoc();
    for (Value v : {src, dst}) {
      Layout dense = contiguous(v);
      if (dense == Layout::No)
        return op->emitOpError()
               << "cannot be lowered: " << v.getType()
               << " is not a contiguous buffer, and one collective call needs "
                  "one (decompose along rows keeps tiles contiguous)";
      if (dense == Layout::AtRunTime)
        rt.assertLayout(
            loc, v, /*innerOnly=*/false,
            (runtimeFnName(fn) + ": a buffer is not contiguous at run time")
                .str());
    }
    auto type = cast<MemRefType>(src.getType());
    std::optional<int32_t> dtype = runtimeDType(type.getElementType());
    if (!dtype)
      return op->emitOpError()
             << "cannot be lowered: element type " << type.getElementType()
             << " is not f32, f16 or bf16";
    FailureOr<Value> group = groups.get(rt, op, symbols);
    if (failed(group))
      return failure();
    SmallVector<Value> args = {rt.ctx, rt.i32(loc, stream),
                               rt.i64(loc, rt.nextTile()), *group,
                               rt.i32(loc, *dtype)};
    if (reduction)
      args.push_back(rt.i32(loc, runtimeReduce(*reduction)));
    if (offset) // overlap_shift's offset, before the buffers
      args.push_back(offset);
    args.push_back(rt.buffer(loc, src).ptr);
    args.push_back(rt.buffer(loc, dst).ptr);
    args.push_back(count);
    rt.status(loc, fn, args);
    return true;
  }

  /// Contiguous to contiguous: memcpy; strided (rank <= 3, unit inner
  /// stride) to contiguous: pack; contiguous to strided: unpack.
  FailureOr<bool> copy(int32_t stream, Location loc, Value src, Value dst) {
    auto srcType = cast<MemRefType>(src.getType());
    int64_t eltBytes = elementBytes(srcType);
    CopyKind kind = classifyCopy(src, dst);
    if (kind == CopyKind::None)
      return false;
    if (kind == CopyKind::Memcpy) {
      rt.status(loc, RuntimeFn::overlap_memcpy,
                {rt.ctx, rt.i32(loc, stream), rt.i64(loc, rt.nextTile()),
                 rt.buffer(loc, dst).ptr, rt.buffer(loc, src).ptr,
                 rt.i64(loc, srcType.getNumElements() * eltBytes)});
      return true;
    }
    bool pack = kind == CopyKind::Pack;
    Value strided = pack ? src : dst, packed = pack ? dst : src;
    // As a 3-D block n0 x n1 x n2 with strides s0, s1 (elements).
    SmallVector<int64_t> dims(srcType.getShape());
    while (dims.size() < 3)
      dims.insert(dims.begin(), 1);
    RuntimeBuilder::Buffer sb = rt.buffer(loc, strided);
    SmallVector<Value> strides(sb.strides);
    Value zero = rt.i64(loc, 0);
    while (strides.size() < 3)
      strides.insert(strides.begin(), zero);
    SmallVector<Value> args = {rt.ctx, rt.i32(loc, stream),
                               rt.i64(loc, rt.nextTile()),
                               rt.i64(loc, eltBytes)};
    Value packedPtr = rt.buffer(loc, packed).ptr;
    args.push_back(pack ? sb.ptr : packedPtr);
    for (int64_t d : dims)
      args.push_back(rt.i64(loc, d));
    args.push_back(strides[0]);
    args.push_back(strides[1]);
    args.push_back(pack ? packedPtr : sb.ptr);
    rt.status(loc, pack ? RuntimeFn::overlap_pack : RuntimeFn::overlap_unpack,
              args);
    return true;
  }

  /// A rank-major tile's shifts (`with_next` on all but its last) are one
  /// call: overlap_fuse_begin before the first, overlap_fuse_end after the
  /// last (one NCCL launch). Signals enqueued meanwhile go after the end.
  FailureOr<bool> lowerShift(ShiftOp shift, int32_t stream) {
    Location loc = shift.getLoc();
    bool joinsNext = inConcurrent && shift.getWithNext();
    if (joinsNext && !fusing.contains(stream)) {
      rt.status(loc, RuntimeFn::overlap_fuse_begin,
                {rt.ctx, rt.i32(loc, stream)});
      fusing[stream];
    }
    FailureOr<bool> lowered = collective(
        shift, stream, RuntimeFn::overlap_shift, shift.getInput(),
        shift.getInit(), std::nullopt, numElements(rt, loc, shift.getInput()),
        rt.i64(loc, shift.getOffset()));
    if (succeeded(lowered) && !joinsNext)
      endFusing(loc, stream);
    return lowered;
  }

  void signal(Location loc, int32_t stream, Value sigs, int32_t index) {
    rt.status(loc, RuntimeFn::overlap_signal,
              {rt.ctx, rt.i32(loc, stream), signals.lookup(sigs),
               rt.i32(loc, index)});
    emitted.push_back({sigs, index});
  }

  RuntimeBuilder &rt;
  SymbolTableCollection &symbols;
  bool cuda;
  Groups groups;
  DenseMap<Value, Value> signals;
  /// Streams inside a fused group, with the signals held back until its end.
  DenseMap<int32_t, SmallVector<std::pair<Value, int32_t>>> fusing;

public:
  /// Closes `stream`'s fused group, if any, and enqueues its held signals.
  void endFusing(Location loc, int32_t stream) {
    auto it = fusing.find(stream);
    if (it == fusing.end())
      return;
    SmallVector<std::pair<Value, int32_t>> held = std::move(it->second);
    fusing.erase(it);
    rt.status(loc, RuntimeFn::overlap_fuse_end, {rt.ctx, rt.i32(loc, stream)});
    for (auto [sigs, index] : held)
      signal(loc, stream, sigs, index);
  }
  /// Whether a concurrent region is being lowered (fusing happens only in
  /// one), and the signals enqueued since the caller last took them.
  bool inConcurrent = false;
  SmallVector<std::pair<Value, int32_t>> emitted;

  /// While an `overlap.concurrent` is lowered: the ops (nested ones too)
  /// that no collective of the region can run beside (opsBesideNoCollective).
  DenseSet<Operation *> alone;
};

struct ConvertOverlapToRuntimePass
    : public mlir::overlap::impl::ConvertOverlapToRuntimeBase<
          ConvertOverlapToRuntimePass> {
  using ConvertOverlapToRuntimeBase::ConvertOverlapToRuntimeBase;

  void runOnOperation() override {
    if (target != "host" && target != "cuda") {
      getOperation().emitError()
          << "convert-overlap-to-runtime: target must be 'host' or 'cuda', "
             "got '"
          << target << "'";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        funcs.push_back(func);
    SymbolTableCollection symbols;
    int64_t signalsKey = 0;
    for (func::FuncOp func : funcs)
      if (failed(lowerFunction(func, symbols, signalsKey)))
        return signalPassFailure();
    if (target == "cuda" && failed(checkOtherFunctions(funcs)))
      return signalPassFailure();
    // Grids were compile-time facts; the groups now exist at run time.
    for (auto grid :
         llvm::make_early_inc_range(getOperation().getOps<shard::GridOp>()))
      if (SymbolTable::symbolKnownUseEmpty(grid, getOperation()))
        grid->erase();
  }

  LogicalResult lowerFunction(func::FuncOp func, SymbolTableCollection &symbols,
                              int64_t &signalsKey) {
    auto ptrTy = LLVM::LLVMPointerType::get(func.getContext());
    if (failed(func.insertArgument(0, ptrTy, {}, func.getLoc())))
      return func.emitError() << "cannot add the runtime context argument";
    func->setAttr("llvm.emit_c_interface", UnitAttr::get(func.getContext()));
    Value ctx = func.getArgument(0);
    RuntimeBuilder rt(getOperation(), func, ctx);
    Lowering lowering(rt, symbols, target == "cuda");

    if (failed(lowerProcessIndices(func, rt, symbols)))
      return failure();
    bool cuda = target == "cuda";
    if (cuda) {
      rt.builder().setInsertionPointToStart(&func.getBody().front());
      lowering.checkCudaContext(func.getLoc());
      lowering.makeDeviceCurrent(func.getLoc());
      if (failed(lowering.lowerDeviceMemory(func)))
        return failure();
    }

    if (failed(lowerBlock(func.getBody().front(), rt, lowering, signalsKey)))
      return failure();
    if (cuda && failed(lowering.lowerNested(func, std::nullopt)))
      return failure();
    if (cuda && failed(stageHostScalars(func, rt)))
      return failure();
    if (cuda)
      lowering.synchronizeBeforeReturns(func);
    // Signals ops are dead once their users are lowered.
    func.walk([](SignalsOp op) {
      if (op->use_empty())
        op->erase();
    });
    WalkResult left = func.walk([&](Operation *op) {
      if (isTileCollective(op) ||
          isa<SignalOp, WaitOp, SignalsOp, ConcurrentOp, StreamOp>(op)) {
        op->emitOpError() << "was not lowered to the runtime";
        return WalkResult::interrupt();
      }
      if (cuda && touchesMemory(op)) {
        (void)emitHostAccessError(op);
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(left.wasInterrupted());
  }

  /// Lowers the ops of `block` in order. Loops and branches (scf.for,
  /// scf.while, scf.if, scf.index_switch: a JAX scan, while or cond) that
  /// hold runtime work are lowered inside, block by block, with the same
  /// rules: each iteration enqueues its tiles and joins them before the next.
  LogicalResult lowerBlock(Block &block, RuntimeBuilder &rt, Lowering &lowering,
                           int64_t &signalsKey) {
    SmallVector<Operation *> work;
    for (Operation &op : block)
      work.push_back(&op);
    for (Operation *op : work) {
      rt.builder().setInsertionPoint(op);
      if (auto sigs = dyn_cast<SignalsOp>(op)) {
        lowering.declareSignals(sigs, signalsKey++);
        continue;
      }
      if (auto concurrent = dyn_cast<ConcurrentOp>(op)) {
        if (failed(lowerConcurrent(concurrent, lowering)))
          return failure();
        continue;
      }
      if (holdsRuntimeWork(op)) {
        for (Region &region : op->getRegions())
          for (Block &inner : region)
            if (failed(lowerBlock(inner, rt, lowering, signalsKey)))
              return failure();
        continue;
      }
      // Outside a concurrent region: enqueue, then keep the program
      // sequential (the host waits, or on a device the streams join).
      int32_t stream = isTileCollective(op) ? kCommStream : kComputeStream;
      FailureOr<bool> lowered = lowering.lower(op, stream);
      if (failed(lowered))
        return failure();
      if (*lowered) {
        lowering.sequence(op->getLoc(), stream);
        op->erase();
      } else if (isa<SignalOp, WaitOp>(op)) {
        return op->emitOpError() << "outside an overlap.stream";
      }
    }
    return success();
  }

  /// A loop or branch whose regions hold ops the runtime runs.
  static bool holdsRuntimeWork(Operation *op) {
    if (!isa<scf::ForOp, scf::WhileOp, scf::IfOp, scf::IndexSwitchOp,
             scf::ExecuteRegionOp>(op))
      return false;
    return op
        ->walk([](Operation *inner) {
          return isTileCollective(inner) ||
                         isa<SignalsOp, ConcurrentOp>(inner) ||
                         lowersToRuntimeCall(inner)
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        })
        .wasInterrupted();
  }

  /// target=cuda: only the entry points get device memory and the
  /// context's streams; a function they call that allocates, launches or
  /// touches buffers would do so on the host (the cuda pipeline inlines
  /// calls before bufferization, so this finds what could not be inlined).
  LogicalResult checkOtherFunctions(ArrayRef<func::FuncOp> lowered) {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || llvm::is_contained(lowered, func))
        continue;
      WalkResult walk = func.walk([&](Operation *op) {
        if (!isa<memref::AllocOp, memref::AllocaOp, gpu::LaunchFuncOp>(op) &&
            !touchesMemory(op))
          return WalkResult::advance();
        op->emitOpError()
            << "is in @" << func.getSymName()
            << ", which is not an entry point: with target=cuda only public "
               "functions get device memory and the context's streams "
               "(inline it into its callers)";
        return WalkResult::interrupt();
      });
      if (walk.wasInterrupted())
        return failure();
    }
    return success();
  }

  /// Emits the streams interleaved per tile, then joins them. A stream is
  /// enqueued up to and including its next signal (or up to a wait whose
  /// signal is not enqueued yet), then the next stream takes its turn: for
  /// matmul + all-reduce that is GEMM t, signal t, then wait t and the
  /// collective of tile t, then tile t + 1, so that collective 0 is on its
  /// stream as soon as GEMM 0 is, not after every GEMM call has returned
  /// on the host. Every wait still comes after its signal (event sync
  /// needs that).
  LogicalResult lowerConcurrent(ConcurrentOp concurrent, Lowering &lowering) {
    SmallVector<SmallVector<Operation *>> lists;
    SmallVector<int32_t> ids;
    for (auto stream : concurrent.getBody().getOps<StreamOp>()) {
      lists.emplace_back();
      for (Operation &op : stream.getBody().front())
        lists.back().push_back(&op);
      ids.push_back(streamIndex(stream));
    }
    lowering.alone = opsBesideNoCollective(concurrent);
    lowering.inConcurrent = true;
    llvm::scope_exit reset([&] {
      lowering.alone.clear();
      lowering.inConcurrent = false;
    });
    std::set<std::pair<void *, int64_t>> raised;
    SmallVector<size_t> cursor(lists.size(), 0);
    bool done = false;
    while (!done) {
      bool progress = false;
      done = true;
      for (size_t s = 0; s < lists.size(); ++s) {
        while (cursor[s] < lists[s].size()) {
          Operation *op = lists[s][cursor[s]];
          if (auto wait = dyn_cast<WaitOp>(op))
            if (!raised.count({wait.getSignals().getAsOpaquePointer(),
                               static_cast<int64_t>(wait.getIndex())}))
              break;
          FailureOr<bool> lowered = lowering.lower(op, ids[s]);
          if (failed(lowered))
            return failure();
          auto signal = dyn_cast<SignalOp>(op);
          // A signal held back in a fused group is raised at its end.
          for (auto [sigs, index] : lowering.emitted)
            raised.insert(
                {sigs.getAsOpaquePointer(), static_cast<int64_t>(index)});
          lowering.emitted.clear();
          if (*lowered)
            op->erase();
          else if (failed(lowering.inlineOp(op, ids[s])))
            return failure();
          ++cursor[s];
          progress = true;
          if (signal)
            break; // the other streams take their turn
        }
        done &= cursor[s] == lists[s].size();
      }
      if (!done && !progress)
        return concurrent.emitOpError()
               << "has streams that wait on each other in a cycle; no order "
                  "of enqueueing can run them";
    }
    for (int32_t id : ids) // a last shift marked `with_next` closes here
      lowering.endFusing(concurrent.getLoc(), id);
    lowering.sequence(concurrent.getLoc(), std::nullopt);
    concurrent->erase();
    return success();
  }
};

} // namespace

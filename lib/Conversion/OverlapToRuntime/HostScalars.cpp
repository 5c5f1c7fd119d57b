//===- HostScalars.cpp - Host reads of device scalars -----------*- C++ -*-===//
//
// Part of convert-overlap-to-runtime with target=cuda: the memref.loads and
// memref.stores the host thread does on device buffers, staged through a
// slot on the host stack.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"
#include "RuntimeBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::overlap;
using namespace mlir::overlap::runtime_lowering;

/// target=cuda: a scalar the host thread reads from (memref.load) or
/// writes to (memref.store) a device buffer (a JAX while's condition, a
/// cond's index, a dynamic_slice's start, a tensor.from_elements) is
/// staged through a slot on the host stack: for a read, once every stream
/// is done, the element is copied into the slot on the compute stream,
/// which the host waits for; a write goes the other way. One element at
/// a time, synchronously: control flow on device data, not bulk work.
LogicalResult mlir::overlap::runtime_lowering::stageHostScalars(
    func::FuncOp func, RuntimeBuilder &rt) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<memref::LoadOp, memref::StoreOp>(op) &&
        !op->getParentOfType<gpu::LaunchOp>())
      ops.push_back(op);
  });
  OpBuilder &b = rt.builder();
  for (Operation *op : ops) {
    auto load = dyn_cast<memref::LoadOp>(op);
    auto store = dyn_cast<memref::StoreOp>(op);
    Value memref = load ? load.getMemref() : store.getMemref();
    if (memref.getDefiningOp<memref::AllocaOp>())
      continue; // host stack memory
    auto type = cast<MemRefType>(memref.getType());
    int64_t bytes = elementBytes(type);
    Type elem = type.getElementType();
    if (!bytes || !LLVM::isCompatibleType(elem))
      return op->emitOpError()
             << "would run on the host, but with target=cuda its buffers "
                "are device memory, and an element of "
             << elem << " cannot be staged through the host";
    Location loc = op->getLoc();
    Value slot;
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&func.getBody().front());
      slot = LLVM::AllocaOp::create(b, loc, rt.ptr(), elem,
                                    rt.i64(loc, 1));
    }
    b.setInsertionPoint(op);
    ValueRange indices = load ? load.getIndices() : store.getIndices();
    SmallVector<OpFoldResult> offsets(indices.begin(), indices.end());
    SmallVector<OpFoldResult> ones(type.getRank(), b.getIndexAttr(1));
    Value element =
        memref::SubViewOp::create(b, loc, memref, offsets, ones, ones);
    Value device = rt.buffer(loc, element).ptr;
    Value size = rt.i64(loc, bytes);
    Value stream = rt.i32(loc, OVERLAP_STREAM_COMPUTE);
    auto waitCompute = [&] {
      rt.status(loc, RuntimeFn::overlap_stream_synchronize,
                {rt.ctx, rt.i32(loc, OVERLAP_STREAM_COMPUTE)});
    };
    if (load) {
      // Every stream done: the element is what the program wrote.
      rt.status(loc, RuntimeFn::overlap_context_synchronize, {rt.ctx});
      rt.status(loc, RuntimeFn::overlap_memcpy,
                {rt.ctx, stream, rt.i64(loc, rt.nextTile()), slot, device,
                 size});
      waitCompute();
      load.replaceAllUsesWith(
          LLVM::LoadOp::create(b, loc, elem, slot).getResult());
    } else {
      LLVM::StoreOp::create(b, loc, store.getValueToStore(), slot);
      rt.status(loc, RuntimeFn::overlap_memcpy,
                {rt.ctx, stream, rt.i64(loc, rt.nextTile()), device, slot,
                 size});
      waitCompute();
    }
    op->erase();
  }
  return success();
}


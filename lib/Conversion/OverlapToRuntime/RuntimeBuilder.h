//===- RuntimeBuilder.h - Building calls of the Overlap runtime -*- C++ -*-===//
//
// Internal to convert-overlap-to-runtime: the C enums of
// overlap_runtime.h, a builder that declares the runtime's functions and
// calls them, and the process groups a function splits at entry.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_CONVERSION_OVERLAPTORUNTIME_RUNTIMEBUILDER_H
#define OVERLAP_LIB_CONVERSION_OVERLAPTORUNTIME_RUNTIMEBUILDER_H

#include "Layout.h"
#include "overlap/Dialect/Overlap/IR/OverlapOps.h"
#include "overlap/Runtime/overlap_runtime.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"
#include "overlap/Runtime/overlap_runtime_process.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <optional>
#include <string>

namespace mlir {
namespace overlap {
namespace runtime_lowering {

// The C enums of overlap_runtime.h, by their own names.
constexpr int32_t kComputeStream = OVERLAP_STREAM_COMPUTE;
constexpr int32_t kCommStream = OVERLAP_STREAM_COMM;

/// A function of the runtime's C ABI: a row of RuntimeABI.def.
enum class RuntimeFn {
#define OVERLAP_RUNTIME_FUNCTION(GROUP, NAME, RESULT, ...) NAME,
#include "overlap/Runtime/RuntimeABI.def"
};

/// The C name of `fn`.
StringRef runtimeFnName(RuntimeFn fn);
/// The MLIR type of `fn` as the lowering calls it: pointers are !llvm.ptr,
/// enums and integers the integers of their width, float f32; from the
/// row's C types.
FunctionType runtimeFnType(RuntimeFn fn, MLIRContext *ctx);

/// The runtime's dtype of an element type (f32, f16, bf16, f64, signless
/// i8/i16/i32/i64), if any.
std::optional<int32_t> runtimeDType(Type type);
/// The runtime's reduction code.
int32_t runtimeReduce(ReductionKind kind);

/// Declares the runtime functions and builds calls and operands of them in
/// one function.
class RuntimeBuilder {
public:
  RuntimeBuilder(ModuleOp module, func::FuncOp func, Value ctx)
      : module(module), func(func), ctx(ctx), b(func.getContext()) {
    ptrTy = LLVM::LLVMPointerType::get(func.getContext());
    i32Ty = b.getI32Type();
    i64Ty = b.getI64Type();
  }

  OpBuilder &builder() { return b; }
  Type ptr() const { return ptrTy; }

  Value i32(Location loc, int64_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 32);
  }
  Value i64(Location loc, int64_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 64);
  }
  Value indexToI64(Location loc, Value v) {
    return arith::IndexCastOp::create(b, loc, i64Ty, v);
  }

  /// Declares `fn` (once, with its type from RuntimeABI.def) and calls it
  /// with `args`, which must have the row's types; returns the result.
  Value call(Location loc, RuntimeFn fn, ValueRange args) {
    StringRef name = runtimeFnName(fn);
    FunctionType type = runtimeFnType(fn, b.getContext());
    assert(TypeRange(args) == type.getInputs() &&
           "runtime call: operands differ from RuntimeABI.def's row");
    func::FuncOp decl = module.lookupSymbol<func::FuncOp>(name);
    if (!decl) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      decl = func::FuncOp::create(b, module.getLoc(), name, type);
      decl.setPrivate();
    }
    auto op = func::CallOp::create(b, loc, decl, args);
    return op.getNumResults() ? op.getResult(0) : Value();
  }

  /// A call that returns overlap_status. Errors are sticky per rank in the
  /// runtime and every later call fails, so the launcher reports the first
  /// one (call, rank, stream, tile); the status itself is not branched on.
  void status(Location loc, RuntimeFn fn, ValueRange args) {
    call(loc, fn, args);
  }

  /// Address of element 0 of a memref and its strides (in elements).
  struct Buffer {
    Value ptr;
    SmallVector<Value> strides;
  };
  Buffer buffer(Location loc, Value memref) {
    auto type = cast<MemRefType>(memref.getType());
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    Value aligned =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    int64_t eltBytes = elementBytes(type);
    Value offsetBytes =
        arith::MulIOp::create(b, loc, meta.getOffset(),
                              arith::ConstantIndexOp::create(b, loc, eltBytes));
    Value addr = arith::AddIOp::create(b, loc, aligned, offsetBytes);
    Buffer buf;
    buf.ptr = LLVM::IntToPtrOp::create(b, loc, ptrTy, indexToI64(loc, addr));
    for (Value stride : meta.getStrides())
      buf.strides.push_back(indexToI64(loc, stride));
    return buf;
  }

  /// Aborts with `message` when the memref's run-time strides are not
  /// row-major contiguous (`innerOnly`: when the innermost stride is not 1).
  void assertLayout(Location loc, Value memref, bool innerOnly,
                    StringRef message) {
    auto type = cast<MemRefType>(memref.getType());
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    Value ok = arith::ConstantIntOp::create(b, loc, 1, 1);
    // The row-major stride of dim d: a constant while the sizes inside it
    // are static, then the product of the run-time sizes.
    int64_t expected = 1;
    Value expectedAtRunTime;
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      if (type.getDimSize(d) != 1) {
        Value want = expectedAtRunTime
                         ? expectedAtRunTime
                         : arith::ConstantIndexOp::create(b, loc, expected);
        Value eq = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         meta.getStrides()[d], want);
        if (type.isDynamicDim(d)) // a size-1 dim has any stride
          eq = arith::OrIOp::create(
              b, loc, eq,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                    meta.getSizes()[d],
                                    arith::ConstantIndexOp::create(b, loc, 1)));
        ok = arith::AndIOp::create(b, loc, ok, eq);
      }
      if (innerOnly)
        break;
      if (type.isDynamicDim(d) || expectedAtRunTime) {
        Value from = expectedAtRunTime
                         ? expectedAtRunTime
                         : arith::ConstantIndexOp::create(b, loc, expected);
        expectedAtRunTime =
            arith::MulIOp::create(b, loc, from, meta.getSizes()[d]);
      } else {
        expected *= type.getDimSize(d);
      }
    }
    cf::AssertOp::create(b, loc, ok, message);
  }

  int64_t nextTile() { return tile++; }

  ModuleOp module;
  func::FuncOp func;
  Value ctx;

private:
  OpBuilder b;
  Type ptrTy, i32Ty, i64Ty;
  int64_t tile = 0;
};

/// The grid coordinates of `rank` (row-major, as shard numbers ranks), in
/// the rank's own integer type.
SmallVector<Value> gridCoords(OpBuilder &b, Location loc, Value rank,
                              ArrayRef<int64_t> shape);
/// The same for extents known at run time (gridExtents), of rank's type.
SmallVector<Value> gridCoords(OpBuilder &b, Location loc, Value rank,
                              ValueRange extents);

/// A memref of `type` (identity layout, of `sizes` as i64) over `ptr`, as
/// the LLVM descriptor the memref lowering will see through the cast.
Value memrefFromPointer(RuntimeBuilder &rt, Location loc, Value ptr,
                        MemRefType type, ArrayRef<Value> sizes);

/// The elements of `memref` as an i64: a constant, or the product of its
/// run-time sizes.
Value numElements(RuntimeBuilder &rt, Location loc, Value memref);

/// The extents of a grid of `shape` at run time, as values of `type` (index
/// or an integer type): a static extent as a constant; the first dynamic
/// one the number of ranks over the product of the static ones; any other
/// dynamic one 1 (a run knows the number of ranks, not how a grid with
/// several dynamic extents factors it; docs/forms.md).
SmallVector<Value> gridExtents(RuntimeBuilder &rt, Location loc,
                               ArrayRef<int64_t> shape, Type type);

/// The tag of overlap_group_split_cached for the group over `axes` of a
/// grid of `shape`: FNV-1a (64 bits) of the shape and the axes, each list
/// as its length and then its values, as little-endian 64-bit words. Equal
/// tags mean equal memberships (the grid's name plays no part), so programs
/// that share a context share the groups of equal grids.
uint64_t groupTag(ArrayRef<int64_t> shape, ArrayRef<int16_t> axes);

/// True when the group over `axes` is the world in world rank order: the
/// axes of extent > 1 are all in the group, in increasing order (e.g. all
/// axes 0, 1, ..., n-1 of the grid). Row-major ranks make the key then the
/// world rank and the color 0 on every rank.
bool isWorldInOrder(ArrayRef<int64_t> shape, ArrayRef<int16_t> axes);

/// The process group of (grid, axes), taken once at function entry: the
/// world (overlap_context_world) when it is one, else a split made once per
/// context (overlap_group_split_cached).
class Groups {
public:
  FailureOr<Value> get(RuntimeBuilder &rt, Operation *op,
                       SymbolTableCollection &symbols) {
    auto gridSym = op->getAttrOfType<FlatSymbolRefAttr>("grid");
    auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
    auto grid = symbols.lookupNearestSymbolFrom<shard::GridOp>(op, gridSym);
    if (!grid)
      return op->emitOpError() << "grid " << gridSym << " not found";
    ArrayRef<int64_t> shape = grid.getShape();
    bool dynamic = llvm::any_of(shape, ShapedType::isDynamic);
    std::string key = gridSym.getValue().str();
    for (int16_t a : axes.asArrayRef())
      key += "," + std::to_string(a);
    if (auto it = cache.find(key); it != cache.end())
      return it->second;

    OpBuilder &b = rt.builder();
    OpBuilder::InsertionGuard guard(b);
    // Groups are taken at function entry, in the order first needed.
    if (lastEntryOp)
      b.setInsertionPointAfter(lastEntryOp);
    else
      b.setInsertionPointToStart(&rt.func.getBody().front());
    Location loc = op->getLoc();
    if (isWorldInOrder(shape, axes.asArrayRef())) {
      Value world = rt.call(loc, RuntimeFn::overlap_context_world, rt.ctx);
      lastEntryOp = world.getDefiningOp();
      cache[key] = world;
      return world;
    }
    Value rank = rt.call(loc, RuntimeFn::overlap_context_rank, rt.ctx);
    // A grid with dynamic extents has them from the number of ranks.
    SmallVector<Value> extents;
    if (dynamic)
      extents = gridExtents(rt, loc, shape, rank.getType());
    else
      for (int64_t e : shape)
        extents.push_back(rt.i32(loc, e));
    SmallVector<Value> coords =
        dynamic ? gridCoords(b, loc, rank, ValueRange(extents))
                : gridCoords(b, loc, rank, shape);
    llvm::SmallDenseSet<int64_t> inGroup;
    for (int16_t a : axes.asArrayRef())
      inGroup.insert(a);
    auto linear = [&](ArrayRef<int64_t> dims) {
      Value acc = rt.i32(loc, 0);
      for (int64_t d : dims) {
        acc = arith::MulIOp::create(b, loc, acc, extents[d]);
        acc = arith::AddIOp::create(b, loc, acc, coords[d]);
      }
      return acc;
    };
    SmallVector<int64_t> others, inAxes;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      if (!inGroup.contains(d))
        others.push_back(d);
    for (int16_t a : axes.asArrayRef())
      inAxes.push_back(a);
    Value color = linear(others), keyV = linear(inAxes);
    Value one = rt.i64(loc, 1);
    Value slot = LLVM::AllocaOp::create(b, loc, rt.ptr(), rt.ptr(), one);
    Value null = LLVM::ZeroOp::create(b, loc, rt.ptr());
    Value tag =
        rt.i64(loc, static_cast<int64_t>(groupTag(shape, axes.asArrayRef())));
    rt.status(loc, RuntimeFn::overlap_group_split_cached,
              {rt.ctx, null, tag, color, keyV, slot});
    auto group = LLVM::LoadOp::create(b, loc, rt.ptr(), slot);
    lastEntryOp = group;
    cache[key] = group.getResult();
    return group.getResult();
  }

  /// Groups go after `op` (target=cuda: after the device is made current,
  /// so that NCCL's splits run on the context's device).
  void startAfter(Operation *op) {
    if (!lastEntryOp)
      lastEntryOp = op;
  }

private:
  std::map<std::string, Value> cache;
  Operation *lastEntryOp = nullptr;
};

/// target=cuda: a scalar the host thread reads from (memref.load) or writes
/// to (memref.store) a device buffer in `func` (a JAX while's condition, a
/// cond's index, a dynamic_slice's start) is staged through a slot on the
/// host stack, one element at a time (HostScalars.cpp).
LogicalResult stageHostScalars(func::FuncOp func, RuntimeBuilder &rt);

/// shard.process_multi_index / process_linear_index (what shard-partition
/// uses to tell ranks apart) and grid_shape in `func`: the rank in the
/// grid's row-major order is the runtime's rank (ProcessIndices.cpp).
LogicalResult lowerProcessIndices(func::FuncOp func, RuntimeBuilder &rt,
                                  SymbolTableCollection &symbols);

} // namespace runtime_lowering
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_LIB_CONVERSION_OVERLAPTORUNTIME_RUNTIMEBUILDER_H

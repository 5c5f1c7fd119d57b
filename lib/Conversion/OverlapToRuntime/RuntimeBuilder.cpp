//===- RuntimeBuilder.cpp - Building calls of the Overlap runtime -*- C++
//-*-===//
//
// The free functions of RuntimeBuilder.h.
//
//===----------------------------------------------------------------------===//

#include "RuntimeBuilder.h"

#include <type_traits>

using namespace mlir;

namespace {
/// The MLIR type of a C type of the runtime's ABI.
template <typename T> Type abiType(MLIRContext *ctx) {
  if constexpr (std::is_pointer_v<T>) {
    return LLVM::LLVMPointerType::get(ctx);
  } else if constexpr (std::is_same_v<T, float>) {
    return Float32Type::get(ctx);
  } else {
    static_assert(std::is_integral_v<T> || std::is_enum_v<T>,
                  "RuntimeABI.def: a C type the lowering cannot pass");
    return IntegerType::get(ctx, 8 * sizeof(T));
  }
}

template <typename Fn> struct AbiFunction;
template <typename R, typename... A> struct AbiFunction<R(A...)> {
  static FunctionType get(MLIRContext *ctx) {
    SmallVector<Type> inputs = {abiType<A>(ctx)...};
    SmallVector<Type> results;
    if constexpr (!std::is_void_v<R>)
      results.push_back(abiType<R>(ctx));
    return FunctionType::get(ctx, inputs, results);
  }
};
} // namespace

namespace mlir {
namespace overlap {
namespace runtime_lowering {

StringRef runtimeFnName(RuntimeFn fn) {
  switch (fn) {
#define OVERLAP_RUNTIME_FUNCTION(GROUP, NAME, RESULT, ...)                     \
  case RuntimeFn::NAME:                                                        \
    return #NAME;
#include "overlap/Runtime/RuntimeABI.def"
  }
  llvm_unreachable("unknown runtime function");
}

FunctionType runtimeFnType(RuntimeFn fn, MLIRContext *ctx) {
  switch (fn) {
#define OVERLAP_RUNTIME_FUNCTION(GROUP, NAME, RESULT, ...)                     \
  case RuntimeFn::NAME:                                                        \
    return AbiFunction<RESULT(__VA_ARGS__)>::get(ctx);
#include "overlap/Runtime/RuntimeABI.def"
  }
  llvm_unreachable("unknown runtime function");
}

std::optional<int32_t> runtimeDType(Type type) {
  if (type.isF32())
    return OVERLAP_F32;
  if (type.isF16())
    return OVERLAP_F16;
  if (type.isBF16())
    return OVERLAP_BF16;
  if (type.isF64())
    return OVERLAP_F64;
  if (type.isSignlessInteger(8))
    return OVERLAP_I8;
  if (type.isSignlessInteger(16))
    return OVERLAP_I16;
  if (type.isSignlessInteger(32))
    return OVERLAP_I32;
  if (type.isSignlessInteger(64))
    return OVERLAP_I64;
  return std::nullopt;
}

int32_t runtimeReduce(ReductionKind kind) {
  switch (kind) {
  case ReductionKind::Sum:
    return OVERLAP_SUM;
  case ReductionKind::Max:
    return OVERLAP_MAX;
  case ReductionKind::Min:
    return OVERLAP_MIN;
  case ReductionKind::Prod:
    return OVERLAP_PROD;
  case ReductionKind::Avg:
    return OVERLAP_AVG;
  }
  llvm_unreachable("unknown reduction");
}

SmallVector<Value> gridExtents(RuntimeBuilder &rt, Location loc,
                               ArrayRef<int64_t> shape, Type type) {
  OpBuilder &b = rt.builder();
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v));
  };
  int64_t others = 1;
  for (int64_t e : shape)
    if (!ShapedType::isDynamic(e))
      others *= e;
  SmallVector<Value> extents;
  bool first = true;
  for (int64_t e : shape) {
    if (!ShapedType::isDynamic(e)) {
      extents.push_back(constant(e));
      continue;
    }
    if (!first) {
      extents.push_back(constant(1));
      continue;
    }
    first = false;
    Value size = rt.call(loc, RuntimeFn::overlap_context_size, rt.ctx);
    if (size.getType() != type)
      size = arith::IndexCastOp::create(b, loc, type, size);
    extents.push_back(arith::DivUIOp::create(b, loc, size, constant(others)));
  }
  return extents;
}

SmallVector<Value> gridCoords(OpBuilder &b, Location loc, Value rank,
                              ValueRange extents) {
  SmallVector<Value> coords(extents.size());
  Value inner =
      arith::ConstantOp::create(b, loc, b.getIntegerAttr(rank.getType(), 1));
  for (int64_t d = extents.size() - 1; d >= 0; --d) {
    Value q = arith::DivUIOp::create(b, loc, rank, inner);
    coords[d] = arith::RemUIOp::create(b, loc, q, extents[d]);
    inner = arith::MulIOp::create(b, loc, inner, extents[d]);
  }
  return coords;
}

SmallVector<Value> gridCoords(OpBuilder &b, Location loc, Value rank,
                              ArrayRef<int64_t> shape) {
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc,
                                     b.getIntegerAttr(rank.getType(), v));
  };
  SmallVector<Value> coords(shape.size());
  int64_t inner = 1;
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    Value q = arith::DivUIOp::create(b, loc, rank, constant(inner));
    coords[d] = arith::RemUIOp::create(b, loc, q, constant(shape[d]));
    inner *= shape[d];
  }
  return coords;
}

uint64_t groupTag(ArrayRef<int64_t> shape, ArrayRef<int16_t> axes) {
  uint64_t hash = 14695981039346656037ull; // FNV-1a offset basis
  auto word = [&](int64_t value) {
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (static_cast<uint64_t>(value) >> (8 * byte)) & 0xff;
      hash *= 1099511628211ull; // FNV prime
    }
  };
  word(static_cast<int64_t>(shape.size()));
  for (int64_t extent : shape)
    word(extent);
  word(static_cast<int64_t>(axes.size()));
  for (int16_t axis : axes)
    word(axis);
  return hash;
}

/// A memref of `type` (identity layout, of `sizes` as i64) over `ptr`, as
/// the LLVM descriptor the memref lowering will see through the cast.
Value memrefFromPointer(RuntimeBuilder &rt, Location loc, Value ptr,
                        MemRefType type, ArrayRef<Value> sizes) {
  OpBuilder &b = rt.builder();
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  SmallVector<Type> fields = {rt.ptr(), rt.ptr(), i64};
  int64_t rank = type.getRank();
  if (rank > 0) {
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
  }
  auto descType = LLVM::LLVMStructType::getLiteral(ctx, fields);
  Value desc = LLVM::PoisonOp::create(b, loc, descType);
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{0});
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{1});
  desc = LLVM::InsertValueOp::create(b, loc, desc, rt.i64(loc, 0),
                                     ArrayRef<int64_t>{2});
  // Row-major strides: constants while the sizes inside are static.
  SmallVector<Value> strides(rank);
  int64_t staticStride = 1;
  Value stride; // once a size inside is dynamic
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride ? stride : rt.i64(loc, staticStride);
    if (!stride && !type.isDynamicDim(d))
      staticStride *= type.getDimSize(d);
    else
      stride = arith::MulIOp::create(b, loc, strides[d], sizes[d]);
  }
  for (int64_t d = 0; d < rank; ++d) {
    desc = LLVM::InsertValueOp::create(b, loc, desc, sizes[d],
                                       ArrayRef<int64_t>{3, d});
    desc = LLVM::InsertValueOp::create(b, loc, desc, strides[d],
                                       ArrayRef<int64_t>{4, d});
  }
  return UnrealizedConversionCastOp::create(b, loc, TypeRange{type},
                                            ValueRange{desc})
      .getResult(0);
}

/// The elements of `memref` as an i64: a constant, or the product of its
/// run-time sizes.
Value numElements(RuntimeBuilder &rt, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.hasStaticShape())
    return rt.i64(loc, type.getNumElements());
  OpBuilder &b = rt.builder();
  Value count = rt.i64(loc, 1);
  for (int64_t d = 0; d < type.getRank(); ++d) {
    Value size =
        type.isDynamicDim(d)
            ? rt.indexToI64(loc, memref::DimOp::create(b, loc, memref, d))
            : rt.i64(loc, type.getDimSize(d));
    count = arith::MulIOp::create(b, loc, count, size);
  }
  return count;
}

bool isWorldInOrder(ArrayRef<int64_t> shape, ArrayRef<int16_t> axes) {
  SmallVector<int64_t> gridAxes, groupAxes;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (shape[d] != 1)
      gridAxes.push_back(d);
  for (int16_t a : axes)
    if (shape[a] != 1)
      groupAxes.push_back(a);
  return gridAxes == groupAxes;
}

} // namespace runtime_lowering
} // namespace overlap
} // namespace mlir

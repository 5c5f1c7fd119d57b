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
  Value inner = arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(rank.getType(), 1));
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

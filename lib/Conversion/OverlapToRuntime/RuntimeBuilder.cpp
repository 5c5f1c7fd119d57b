//===- RuntimeBuilder.cpp - Building calls of the Overlap runtime -*- C++
//-*-===//
//
// The free functions of RuntimeBuilder.h.
//
//===----------------------------------------------------------------------===//

#include "RuntimeBuilder.h"

using namespace mlir;

namespace mlir {
namespace overlap {
namespace runtime_lowering {

std::optional<int32_t> runtimeDType(Type type) {
  if (type.isF32())
    return RtF32;
  if (type.isF16())
    return RtF16;
  if (type.isBF16())
    return RtBF16;
  return std::nullopt;
}

int32_t runtimeReduce(ReductionKind kind) {
  switch (kind) {
  case ReductionKind::Sum:
    return RtSum;
  case ReductionKind::Max:
    return RtMax;
  case ReductionKind::Min:
    return RtMin;
  case ReductionKind::Prod:
    return RtProd;
  case ReductionKind::Avg:
    return RtAvg;
  }
  llvm_unreachable("unknown reduction");
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

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

} // namespace runtime_lowering
} // namespace overlap
} // namespace mlir

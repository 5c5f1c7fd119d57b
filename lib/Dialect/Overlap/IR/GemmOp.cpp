//===- GemmOp.cpp - A GEMM that reads its operands as they lie -*- C++ -*-===//
//
// `overlap.gemm`: the m, n and k of its operands (transposed or not), its
// verifier and its memory effects (on memrefs: reads a and b, reads init
// only when it accumulates, writes init).
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::overlap;

namespace {

ShapedType shapedOf(Value v) { return cast<ShapedType>(v.getType()); }

/// Size `fromEnd` dimensions from the end (1: the last) of `v`'s shape.
int64_t dimFromEnd(Value v, int64_t fromEnd) {
  ShapedType type = shapedOf(v);
  return type.getDimSize(type.getRank() - fromEnd);
}

/// Two sizes agree unless both are static and differ.
bool agree(int64_t x, int64_t y) {
  return ShapedType::isDynamic(x) || ShapedType::isDynamic(y) || x == y;
}

} // namespace

bool mlir::overlap::isGemmElementType(Type type) {
  return type.isF32() || type.isF16() || type.isBF16();
}

int64_t GemmOp::getM() { return dimFromEnd(getInit(), 2); }
int64_t GemmOp::getN() { return dimFromEnd(getInit(), 1); }
int64_t GemmOp::getK() { return dimFromEnd(getA(), getTransposeA() ? 2 : 1); }

LogicalResult GemmOp::verify() {
  ShapedType a = shapedOf(getA()), b = shapedOf(getB()),
             init = shapedOf(getInit());
  bool tensors = isa<RankedTensorType>(init);
  for (Value v : {getA(), getB()})
    if (isa<RankedTensorType>(v.getType()) != tensors)
      return emitOpError() << "needs a, b and init all tensors or all memrefs";
  if (tensors != static_cast<bool>(getResult()))
    return emitOpError() << (tensors ? "on tensors needs a result"
                                     : "on memrefs has no result");
  if (getResult() && getResult().getType() != init)
    return emitOpError() << "result type " << getResult().getType()
                         << " is not init's " << init;
  int64_t rank = init.getRank();
  if (rank != 2 && rank != 3)
    return emitOpError() << "needs init of rank 2 (m x n) or 3 (batch x m x "
                            "n), not "
                         << rank;
  if (a.getRank() != rank)
    return emitOpError() << "needs a of init's rank " << rank << ", not "
                         << a.getRank();
  if (b.getRank() != 2 && b.getRank() != rank)
    return emitOpError() << "needs b of rank 2 or init's rank " << rank
                         << ", not " << b.getRank();
  Type ab = a.getElementType();
  if (!isGemmElementType(ab) || b.getElementType() != ab)
    return emitOpError() << "needs a and b of one element type among f16, "
                            "bf16 and f32, not "
                         << ab << " and " << b.getElementType();
  Type c = init.getElementType();
  if (!c.isF32() && c != ab)
    return emitOpError() << "needs init of f32 or a's element type " << ab
                         << ", not " << c;
  int64_t m = getM(), n = getN();
  int64_t am = dimFromEnd(getA(), getTransposeA() ? 1 : 2), k = getK();
  int64_t bk = dimFromEnd(getB(), getTransposeB() ? 1 : 2),
          bn = dimFromEnd(getB(), getTransposeB() ? 2 : 1);
  auto mismatch = [&](StringRef what, int64_t x, int64_t y) {
    return emitOpError() << what << " disagree: " << x << " and " << y << " ("
                         << a << ", " << b << " into " << init
                         << (getTransposeA() ? ", a transposed" : "")
                         << (getTransposeB() ? ", b transposed" : "") << ")";
  };
  if (!agree(m, am))
    return mismatch("the rows of a and init", am, m);
  if (!agree(k, bk))
    return mismatch("k of a and b", k, bk);
  if (!agree(n, bn))
    return mismatch("the columns of b and init", bn, n);
  if (rank == 3) {
    if (!agree(a.getDimSize(0), init.getDimSize(0)))
      return mismatch("the batch of a and init", a.getDimSize(0),
                      init.getDimSize(0));
    if (b.getRank() == 3 && !agree(b.getDimSize(0), init.getDimSize(0)))
      return mismatch("the batch of b and init", b.getDimSize(0),
                      init.getDimSize(0));
  }
  return success();
}

void GemmOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (!isa<BaseMemRefType>(getInit().getType()))
    return;
  effects.emplace_back(MemoryEffects::Read::get(), &getAMutable(),
                       SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Read::get(), &getBMutable(),
                       SideEffects::DefaultResource::get());
  if (getAccumulate())
    effects.emplace_back(MemoryEffects::Read::get(), &getInitMutable(),
                         SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(), &getInitMutable(),
                       SideEffects::DefaultResource::get());
}

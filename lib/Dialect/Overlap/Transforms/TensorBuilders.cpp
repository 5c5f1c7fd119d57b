//===- TensorBuilders.cpp - Small tensor IR builders ----------*- C++ -*-===//
//
// See TensorBuilders.h.
//
//===----------------------------------------------------------------------===//

#include "TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::overlap;

SmallVector<int64_t> mlir::overlap::axisFirst(int64_t axis, int64_t rank) {
  SmallVector<int64_t> perm = {axis};
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      perm.push_back(d);
  return perm;
}

SmallVector<int64_t> mlir::overlap::invertPermutation(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> inv(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inv[p] = i;
  return inv;
}

Value mlir::overlap::transposeTensor(OpBuilder &b, Location loc, Value value,
                                     ArrayRef<int64_t> perm) {
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  Value init = tensor::EmptyOp::create(b, loc, shape, type.getElementType());
  return linalg::TransposeOp::create(b, loc, value, init, perm)->getResult(0);
}

linalg::GenericOp mlir::overlap::elementwiseGeneric(
    OpBuilder &b, Location loc, Value input, Value init,
    function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  unsigned rank = cast<RankedTensorType>(init.getType()).getRank();
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  if (!body)
    return linalg::GenericOp::create(b, loc, init.getType(), input, init, maps,
                                     iterators);
  return linalg::GenericOp::create(b, loc, init.getType(), input, init, maps,
                                   iterators, body);
}

Value mlir::overlap::convertFloatInto(OpBuilder &b, Location loc, Value value,
                                      Value into) {
  Type from = getElementTypeOrSelf(value.getType());
  Type to = getElementTypeOrSelf(into.getType());
  bool widen = from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth();
  return elementwiseGeneric(
             b, loc, value, into,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value converted =
                   widen ? arith::ExtFOp::create(nb, nloc, to, args[0])
                               .getResult()
                         : arith::TruncFOp::create(nb, nloc, to, args[0])
                               .getResult();
               linalg::YieldOp::create(nb, nloc, converted);
             })
      .getResult(0);
}

bool mlir::overlap::isPlainElementwise(linalg::GenericOp op) {
  return op.hasPureTensorSemantics() && op.getNumDpsInputs() == 1 &&
         op.getNumDpsInits() == 1 && op.getNumReductionLoops() == 0 &&
         llvm::all_of(op.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); }) &&
         op.getBlock()->getOps<linalg::IndexOp>().empty() &&
         op.getBlock()->getArgument(1).use_empty();
}

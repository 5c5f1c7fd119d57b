//===- TensorBuilders.cpp - Small tensor IR builders ----------*- C++ -*-===//
//
// See TensorBuilders.h.
//
//===----------------------------------------------------------------------===//

#include "TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

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
  // Dynamic sizes are read from `value` (tensor.dim).
  SmallVector<OpFoldResult> from = tensor::getMixedSizes(b, loc, value), sizes;
  for (int64_t p : perm)
    sizes.push_back(from[p]);
  Value init = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
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

/// `v` as a `to`: floats widen or round, integers sign-extend or
/// truncate (shard's integers are signless; sign extension keeps negative
/// values; i1 is a boolean and zero-extends), and between the two kinds
/// the signed conversions.
static Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  unsigned fromBits = from.getIntOrFloatBitWidth();
  unsigned toBits = to.getIntOrFloatBitWidth();
  if (isa<FloatType>(from) && isa<FloatType>(to)) {
    if (fromBits == toBits) // f16 <-> bf16: through f32, exact on the way
      v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    if (v.getType().getIntOrFloatBitWidth() < toBits)
      return arith::ExtFOp::create(b, loc, to, v);
    return arith::TruncFOp::create(b, loc, to, v);
  }
  if (isa<IntegerType>(from) && isa<IntegerType>(to)) {
    if (fromBits < toBits && from.isSignlessInteger(1))
      return arith::ExtUIOp::create(b, loc, to, v); // a boolean: 0 or 1
    if (fromBits < toBits)
      return arith::ExtSIOp::create(b, loc, to, v);
    return arith::TruncIOp::create(b, loc, to, v);
  }
  if (isa<IntegerType>(from))
    return arith::SIToFPOp::create(b, loc, to, v);
  return arith::FPToSIOp::create(b, loc, to, v);
}

Value mlir::overlap::convertElementsInto(OpBuilder &b, Location loc,
                                         Value value, Value into) {
  Type to = getElementTypeOrSelf(into.getType());
  return elementwiseGeneric(b, loc, value, into,
                            [&](OpBuilder &nb, Location nloc, ValueRange args) {
                              linalg::YieldOp::create(
                                  nb, nloc,
                                  convertScalar(nb, nloc, args[0], to));
                            })
      .getResult(0);
}

linalg::FillOp mlir::overlap::fillThroughViews(Value v) {
  for (Operation *def = v.getDefiningOp(); def;
       def = def->getOperand(0).getDefiningOp()) {
    if (auto fill = dyn_cast<linalg::FillOp>(def))
      return fill.hasPureTensorSemantics() ? fill : linalg::FillOp();
    // A transpose of a fill is the fill too (on tensors: its operand 0 is
    // its input).
    auto transpose = dyn_cast<linalg::TransposeOp>(def);
    if (transpose && !transpose.hasPureTensorSemantics())
      return {};
    if (!transpose && !isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
                           tensor::ExtractSliceOp>(def))
      return {};
  }
  return {};
}

bool mlir::overlap::isPositiveZero(Value v, linalg::FillOp *direct) {
  linalg::FillOp fill = fillThroughViews(v);
  FloatAttr value;
  if (!fill || !matchPattern(fill.getInputs()[0], m_Constant(&value)) ||
      !value.getValue().isPosZero())
    return false;
  if (direct && fill.getResult(0) == v)
    *direct = fill;
  return true;
}

linalg::GenericOp mlir::overlap::roundingUser(Value v, Type to,
                                              Operation *&reshape) {
  reshape = nullptr;
  if (!v.hasOneUse())
    return {};
  Operation *user = *v.getUsers().begin();
  if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user)) {
    if (!user->getResult(0).hasOneUse())
      return {};
    reshape = user;
    user = *user->getResult(0).getUsers().begin();
  }
  auto generic = dyn_cast<linalg::GenericOp>(user);
  if (!generic || !isPlainElementwise(generic) ||
      getElementTypeOrSelf(generic.getResult(0).getType()) != to)
    return {};
  Block *body = generic.getBlock();
  if (body->getOperations().size() != 2)
    return {};
  auto trunc = dyn_cast<arith::TruncFOp>(body->front());
  if (!trunc || trunc.getIn() != body->getArgument(0) ||
      trunc.getRoundingmodeAttr() ||
      body->getTerminator()->getOperand(0) != trunc.getResult())
    return {};
  return generic;
}

Value mlir::overlap::reapplyReshape(OpBuilder &b, Operation *reshape,
                                    Value value, Type resultType) {
  if (auto collapse = dyn_cast_or_null<tensor::CollapseShapeOp>(reshape))
    return tensor::CollapseShapeOp::create(b, collapse.getLoc(), value,
                                           collapse.getReassociationIndices());
  if (auto expand = dyn_cast_or_null<tensor::ExpandShapeOp>(reshape))
    return tensor::ExpandShapeOp::create(b, expand.getLoc(), resultType, value,
                                         expand.getReassociationIndices());
  return value;
}

bool mlir::overlap::isPlainElementwise(linalg::GenericOp op) {
  return op.hasPureTensorSemantics() && op.getNumDpsInputs() == 1 &&
         op.getNumDpsInits() == 1 && op.getNumReductionLoops() == 0 &&
         llvm::all_of(op.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); }) &&
         op.getBlock()->getOps<linalg::IndexOp>().empty() &&
         op.getBlock()->getArgument(1).use_empty();
}

Value mlir::overlap::linearInGroup(OpBuilder &b, Location loc,
                                   shard::GridOp grid, ArrayRef<int16_t> axes,
                                   ValueRange coords) {
  Value rank = arith::ConstantIndexOp::create(b, loc, 0);
  for (auto [axis, coord] : llvm::zip_equal(axes, coords)) {
    // A dynamic extent is the grid's at run time (shard.grid_shape).
    int64_t size = grid.getShape()[axis];
    Value extent =
        ShapedType::isDynamic(size)
            ? shard::GridShapeOp::create(b, loc, TypeRange{b.getIndexType()},
                                         grid.getSymName(),
                                         ArrayRef<int16_t>{axis})
                  ->getResult(0)
            : arith::ConstantIndexOp::create(b, loc, size).getResult();
    rank = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, rank, extent), coord);
  }
  return rank;
}

Value mlir::overlap::groupRankOf(OpBuilder &b, Location loc, shard::GridOp grid,
                                 ArrayRef<int16_t> axes) {
  SmallVector<Type> indexTypes(axes.size(), b.getIndexType());
  auto coords = shard::ProcessMultiIndexOp::create(b, loc, indexTypes,
                                                   grid.getSymName(), axes);
  return linearInGroup(b, loc, grid, axes, coords->getResults());
}

Value mlir::overlap::stackGroup(OpBuilder &b, Location loc, Value part,
                                shard::GridOp grid, ArrayRef<int16_t> axes,
                                int64_t group) {
  auto type = cast<RankedTensorType>(part.getType());
  part = linalg::CopyOp::create(b, loc, part,
                                tensor::EmptyOp::create(b, loc, type.getShape(),
                                                        type.getElementType())
                                    .getResult())
             .getResult(0);
  SmallVector<int64_t> unit = {1}, stacked = {group};
  unit.append(type.getShape().begin(), type.getShape().end());
  stacked.append(type.getShape().begin(), type.getShape().end());
  SmallVector<ReassociationIndices> assoc = {{0, 1}};
  for (int64_t d = 2; d <= type.getRank(); ++d)
    assoc.push_back({d});
  if (type.getRank() == 0)
    assoc = {};
  Value one = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(unit, type.getElementType()), part, assoc);
  return shard::AllGatherOp::create(
      b, loc, RankedTensorType::get(stacked, type.getElementType()),
      FlatSymbolRefAttr::get(grid.getSymNameAttr()),
      b.getDenseI16ArrayAttr(axes), one, b.getIndexAttr(0));
}

Value mlir::overlap::pickBlock(OpBuilder &b, Location loc, Value stacked,
                               Value k) {
  auto type = cast<RankedTensorType>(stacked.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
  offsets[0] = k;
  sizes.push_back(b.getIndexAttr(1));
  for (int64_t d : type.getShape().drop_front())
    sizes.push_back(b.getIndexAttr(d));
  auto partType = RankedTensorType::get(type.getShape().drop_front(),
                                        type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, partType, stacked, offsets,
                                        sizes, strides);
}

Value mlir::overlap::selectTensor(OpBuilder &b, Location loc, Value cond,
                                  Value a, Value other) {
  auto type = cast<RankedTensorType>(a.getType());
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{a, other}, ValueRange{init},
             ArrayRef<AffineMap>{id, id, id}, iterators,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value v =
                   arith::SelectOp::create(nb, nl, cond, args[0], args[1]);
               linalg::YieldOp::create(nb, nl, v);
             })
      .getResult(0);
}

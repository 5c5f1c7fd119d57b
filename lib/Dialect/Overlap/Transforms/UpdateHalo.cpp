//===- UpdateHalo.cpp - shard.update_halo as gathers and slices -*- C++ -*-===//
//
// Part of overlap-lower-collectives: a shard.update_halo (what
// shard-partition emits for a sharding with halo_sizes) has no runtime
// call, so it is written with one that has: per split dimension, in order,
// every rank all-gathers the core rows its neighbours need (its last `lo`
// and first `hi` core rows), and takes its lower halo from the rank below
// and its upper halo from the rank above; the first and last rank of the
// group keep theirs, which have no neighbour. A later dimension exchanges
// whole extents of the earlier ones, halos included, so corners come from
// the diagonal neighbours. It moves the group size times the data a
// neighbour exchange would, the price of needing no point-to-point call.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/UpdateHalo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

std::string mlir::overlap::whyNotExpanded(shard::UpdateHaloOp op,
                                          SymbolTableCollection &symbols) {
  auto type = dyn_cast<RankedTensorType>(op.getDestination().getType());
  if (!type || !type.hasStaticShape())
    return "update_halo of a memref or a dynamic shape";
  if (!op.getHaloSizes().empty())
    return "update_halo with dynamic halo sizes";
  auto grid =
      symbols.lookupNearestSymbolFrom<shard::GridOp>(op, op.getGridAttr());
  if (!grid || llvm::any_of(grid.getShape(), ShapedType::isDynamic))
    return "update_halo on a grid that is missing or dynamic";
  // Two halo sizes (lower, upper) per split dimension, in order.
  ArrayRef<int64_t> halos = op.getStaticHaloSizes();
  int64_t split = 0;
  for (auto [dim, axes] : llvm::enumerate(op.getSplitAxes().getAxes())) {
    if (axes.empty())
      continue;
    if (axes.size() > 1)
      return "update_halo of a dimension split over several grid axes";
    if (2 * split + 1 >= int64_t(halos.size()))
      return "update_halo with fewer halo sizes than split dimensions";
    int64_t lo = halos[2 * split], hi = halos[2 * split + 1];
    int64_t core = type.getDimSize(dim) - lo - hi;
    if (lo < 0 || hi < 0 || core < std::max(lo, hi))
      return "update_halo whose halos are larger than the core";
    ++split;
  }
  return "";
}

namespace {
Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// rows [at, at + n) of `t` along `dim` (a static slice).
Value rows(OpBuilder &b, Location loc, Value t, int64_t dim, OpFoldResult at,
           int64_t n) {
  auto type = cast<RankedTensorType>(t.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
  for (int64_t d : type.getShape())
    sizes.push_back(b.getIndexAttr(d));
  offsets[dim] = at;
  sizes[dim] = b.getIndexAttr(n);
  return tensor::ExtractSliceOp::create(b, loc, t, offsets, sizes, strides);
}

/// Every group rank's `part` stacked along a new leading dim: [g, ...].
Value gatherAll(OpBuilder &b, Location loc, Value part, shard::GridOp grid,
                shard::GridAxesAttr axes, int64_t group) {
  auto type = cast<RankedTensorType>(part.getType());
  // A copy into a fresh tensor: the rows of a dimension other than the
  // first are strided in the buffer, and one collective call takes one
  // contiguous buffer.
  part = linalg::CopyOp::create(
             b, loc, part,
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
      FlatSymbolRefAttr::get(grid.getSymNameAttr()), axes, one,
      b.getIndexAttr(0));
}

/// `stacked[k]` as a block of the part's shape (k an index value).
Value pick(OpBuilder &b, Location loc, Value stacked, Value k) {
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

/// `cond ? a : b` elementwise, `cond` a scalar i1 (used in the body).
Value choose(OpBuilder &b, Location loc, Value cond, Value a, Value other) {
  auto type = cast<RankedTensorType>(a.getType());
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(),
                                       type.getElementType());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{a, other}, ValueRange{init},
             ArrayRef<AffineMap>{id, id, id}, iterators,
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value v = arith::SelectOp::create(nb, nl, cond, args[0],
                                                 args[1]);
               linalg::YieldOp::create(nb, nl, v);
             })
      .getResult(0);
}
} // namespace

Value mlir::overlap::expandUpdateHalo(OpBuilder &b, shard::UpdateHaloOp op,
                                      SymbolTableCollection &symbols) {
  Location loc = op.getLoc();
  auto grid =
      symbols.lookupNearestSymbolFrom<shard::GridOp>(op, op.getGridAttr());
  ArrayRef<int64_t> halos = op.getStaticHaloSizes();
  Value t = op.getDestination();
  auto type = cast<RankedTensorType>(t.getType());
  int64_t halo = 0;
  for (auto [dim, axes] : llvm::enumerate(op.getSplitAxes().getAxes())) {
    if (axes.empty())
      continue;
    int64_t lo = halos[2 * halo], hi = halos[2 * halo + 1];
    ++halo;
    int64_t size = type.getDimSize(dim), core = size - lo - hi;
    int64_t group = grid.getShape()[axes[0]];
    if (group == 1 || (lo == 0 && hi == 0))
      continue;
    Value r = shard::ProcessMultiIndexOp::create(
                  b, loc, TypeRange{b.getIndexType()}, op.getGridAttr().getValue(),
                  axes)
                  ->getResult(0);
    Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1);
    Value last = indexConst(b, loc, group - 1);
    // One halo: `width` rows at `at` become the `width` rows at `from` of
    // the neighbour `step` ranks away (-1 below, +1 above), where there is
    // one.
    auto exchange = [&](int64_t width, int64_t from, int64_t at, int step) {
      Value mine = rows(b, loc, t, dim, b.getIndexAttr(from), width);
      Value all = gatherAll(b, loc, mine, grid, axes, group);
      Value neighbour =
          step < 0 ? arith::MaxSIOp::create(
                         b, loc, arith::SubIOp::create(b, loc, r, one), zero)
                         .getResult()
                   : arith::MinSIOp::create(
                         b, loc, arith::AddIOp::create(b, loc, r, one), last)
                         .getResult();
      Value has = arith::CmpIOp::create(
          b, loc,
          step < 0 ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::slt, r,
          step < 0 ? zero : last);
      Value halo = choose(b, loc, has, pick(b, loc, all, neighbour),
                          rows(b, loc, t, dim, b.getIndexAttr(at), width));
      SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
      offsets[dim] = b.getIndexAttr(at);
      SmallVector<OpFoldResult> sizes, strides(type.getRank(),
                                               b.getIndexAttr(1));
      for (int64_t d : cast<RankedTensorType>(halo.getType()).getShape())
        sizes.push_back(b.getIndexAttr(d));
      t = tensor::InsertSliceOp::create(b, loc, halo, t, offsets, sizes,
                                        strides);
    };
    // The lower halo: the last `lo` core rows of the rank below; the upper
    // halo: the first `hi` core rows of the rank above.
    if (lo > 0)
      exchange(lo, core, 0, -1);
    if (hi > 0)
      exchange(hi, lo, lo + core, +1);
  }
  return t;
}

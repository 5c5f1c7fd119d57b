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

#include "TensorBuilders.h"

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
      Value all = stackGroup(b, loc, mine, grid, axes.asArrayRef(), group);
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
      Value halo = selectTensor(b, loc, has, pickBlock(b, loc, all, neighbour),
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

//===- TensorBuilders.h - Small tensor IR builders ------------*- C++ -*-===//
//
// Builders the Transforms passes share: permutations and transposes,
// elementwise linalg.generic ops on identity maps, float conversions, and
// the one-input elementwise op that can move across reshapes and
// collectives, and the group builders the collectives written with other
// collectives share. Private to the Transforms library.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_TENSORBUILDERS_H
#define OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_TENSORBUILDERS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace overlap {

/// The permutation that moves dimension `axis` of a rank-`rank` tensor to
/// the front, keeping the others in order.
SmallVector<int64_t> axisFirst(int64_t axis, int64_t rank);

/// The inverse of the permutation `perm`.
SmallVector<int64_t> invertPermutation(ArrayRef<int64_t> perm);

/// `value` (a ranked tensor) with its dimensions permuted by a
/// linalg.transpose (result dim i = input dim perm[i]); `value` itself for
/// the identity.
Value transposeTensor(OpBuilder &b, Location loc, Value value,
                      ArrayRef<int64_t> perm);

/// A linalg.generic of `input` into `init` (same shape) with identity maps
/// and parallel loops; its body from `body`, or left empty for the caller
/// to fill when `body` is null.
linalg::GenericOp elementwiseGeneric(
    OpBuilder &b, Location loc, Value input, Value init,
    function_ref<void(OpBuilder &, Location, ValueRange)> body = nullptr);

/// `value` converted elementwise to the element type of `into`, written
/// into `into`: floats widen or round, integers sign-extend (i1
/// zero-extends) or truncate, and between the two the signed conversions.
Value convertElementsInto(OpBuilder &b, Location loc, Value value, Value into);

/// The linalg.fill on tensors that `v` is, seen through tensor reshapes
/// (collapse_shape, expand_shape), extract_slice and linalg.transpose:
/// every element of `v` is its value. Null when `v` is not one.
linalg::FillOp fillThroughViews(Value v);

/// Whether every element of `v` is +0.0: a linalg.fill of +0.0 on tensors,
/// seen through views (fillThroughViews). `direct` gets the fill when `v`
/// is its result.
bool isPositiveZero(Value v, linalg::FillOp *direct = nullptr);

/// `v`'s one user when it only rounds `v` elementwise to `to`
/// (linalg.generic of one arith.truncf, default rounding), seen through at
/// most one reshape (then in `reshape`); null otherwise.
linalg::GenericOp roundingUser(Value v, Type to, Operation *&reshape);

/// `value` reshaped as `reshape` (a tensor.collapse_shape or expand_shape,
/// or null for none) reshapes its source, to `resultType` (expand_shape's
/// type; collapse_shape infers it).
Value reapplyReshape(OpBuilder &b, Operation *reshape, Value value,
                     Type resultType);

/// An elementwise linalg.generic of one input that reads neither indices
/// nor its init: it computes the same values on any reshaping or
/// redistribution of its input.
bool isPlainElementwise(linalg::GenericOp op);

/// The index in a group on `axes` of `grid` of the rank at `coords` (one
/// per axis): row-major in the order the axes are listed.
Value linearInGroup(OpBuilder &b, Location loc, shard::GridOp grid,
                    ArrayRef<int16_t> axes, ValueRange coords);

/// The calling rank's index in its group on `axes` of `grid`: its
/// coordinates on the axes, row-major in the order the axes are listed (as
/// shard numbers the ranks of a group and its collectives order blocks).
Value groupRankOf(OpBuilder &b, Location loc, shard::GridOp grid,
                  ArrayRef<int16_t> axes);

/// Every group rank's `part` stacked along a new leading dimension
/// ([group, ...part's shape]) by one shard.all_gather; `part` is copied
/// into a fresh tensor first, since one collective call takes one
/// contiguous buffer.
Value stackGroup(OpBuilder &b, Location loc, Value part, shard::GridOp grid,
                 ArrayRef<int16_t> axes, int64_t group);

/// `stacked[k]` (k an index value) with the leading dimension dropped.
Value pickBlock(OpBuilder &b, Location loc, Value stacked, Value k);

/// `cond ? a : other` on whole tensors (`cond` a scalar i1).
Value selectTensor(OpBuilder &b, Location loc, Value cond, Value a,
                   Value other);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_TENSORBUILDERS_H

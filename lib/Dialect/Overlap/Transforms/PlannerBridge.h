//===- PlannerBridge.h - What passes share to call the Planner -*- C++ -*-===//
//
// Turns IR facts (element types, grids, pass options) into the Planner's
// plain values. Private to the Transforms library.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_PLANNERBRIDGE_H
#define OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_PLANNERBRIDGE_H

#include "overlap/Dialect/Overlap/IR/OverlapOps.h"
#include "overlap/Planner/Profile.h"
#include "overlap/Planner/RankMajor.h"
#include "overlap/Planner/TileLayout.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <optional>
#include <string>

namespace mlir {
namespace overlap {

/// The Planner's namespace, as the passes that call it name it.
namespace planner = ::overlap::planner;

/// Loads the profile a pass option names (a path, or a bare name looked up
/// in planner::shippedProfilesDir()). Emits an
/// error on `anchor` that carries the Planner's message on failure.
FailureOr<planner::Profile>
loadPassProfile(Operation *anchor, StringRef passName, StringRef nameOrPath);

/// The Planner's name for a matmul element type, if it has one.
std::optional<planner::DType> plannerDType(Type type);

/// The Planner's collective of a fused op (`overlap.matmul_all_reduce`,
/// `overlap.matmul_reduce_scatter`, `overlap.all_gather_matmul`, all-to-all
/// for `overlap.all_to_all_matmul` and `overlap.matmul_all_to_all`); nullopt
/// for any other op.
std::optional<planner::Collective> plannerCollective(Operation *op);

/// M of a fused op's full product, which its plan partitions: the rows of A
/// (all-reduce, reduce-scatter) or of the result (all-gather), the rows all
/// experts compute (all-to-all);
/// ShapedType::kDynamic when not static.
int64_t fusedRows(Operation *op);

/// The first of a fused op's A, B, C and result whose shape is not static,
/// as "C is 'tensor<?x32xf32>'"; empty when all are static. Plans and tiles
/// are made only for static shapes (a tile's slices and packed buffers have
/// static types), so overlap-plan and overlap-decompose leave such an op
/// alone and bufferization refuses it, all with this reason.
std::string dynamicShapeOf(Operation *op);

/// Where the rows of each of `plan`'s tiles of fused op `op` over `group`
/// ranks are: the Planner's TileLayout, the one rule that overlap-bench runs
/// too (the all-reduce layout does not depend on the group: pass 1 when it
/// is unknown; all-to-all's blocks are the group's ranks x experts). Emits an
/// error on `op` with the Planner's reason when the plan does not fit the op.
FailureOr<planner::TileLayout> tileLayoutOf(Operation *op, PlanAttr plan,
                                            int64_t group);

/// The rank-major layout (planner::RankMajorLayout) of a plan with
/// `layout = "rank-major"` on a reduce-scatter or all-gather op over
/// `group` ranks: the cut of one block is the first tiles/G tiles. Emits an
/// error on `op` when the plan does not fit the op.
FailureOr<planner::RankMajorLayout> rankMajorLayoutOf(Operation *op,
                                                      PlanAttr plan,
                                                      int64_t group);

/// A reduce-scatter or all-gather fused op that overlap-raise wrote for a
/// `[b, s, k]` layout cut along s with b > 1 (sequence parallelism): A is
/// `collapse_shape(linalg.transpose(x, [1, 0, 2]))`, C a fill (through
/// views) or the same of `y`, and the result's one use an `expand_shape`
/// to `[rows, b, N]` whose one use transposes it back (`back`). Its rows
/// are then groups of b (the Planner's MatmulProblem::rowGroup) that
/// overlap-decompose computes b-major, reading x and writing the result in
/// their own layouts (no transpose of either).
struct StridedRows {
  int64_t b = 1;
  Value x, y; ///< y is null when C is a fill
  tensor::ExpandShapeOp expand;
  linalg::TransposeOp back;
};
std::optional<StridedRows> stridedRowsOf(Operation *op);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_PLANNERBRIDGE_H

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

#include <optional>

namespace mlir {
namespace overlap {

/// Loads the profile a pass option names (a path, or a bare name looked up
/// in $OVERLAP_PROFILES_DIR, else the source tree's profiles/). Emits an
/// error on `anchor` that carries the Planner's message on failure.
FailureOr<::overlap::planner::Profile> loadPassProfile(Operation *anchor,
                                                      StringRef passName,
                                                      StringRef nameOrPath);

/// The Planner's name for a matmul element type, if it has one.
std::optional<::overlap::planner::DType> plannerDType(Type type);

/// Group size of the grid and axes named by `op`'s `grid` and `grid_axes`
/// attributes; ShapedType::kDynamic when unknown.
int64_t groupSizeOf(Operation *op, SymbolTableCollection &symbols);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_PLANNERBRIDGE_H

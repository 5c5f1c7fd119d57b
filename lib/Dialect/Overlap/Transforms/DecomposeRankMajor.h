//===- DecomposeRankMajor.h - Pieces of overlap-decompose ------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// What overlap-decompose's two layouts share: the interleaved tiles are
// built in Decompose.cpp, the rank-major ones in DecomposeRankMajor.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_DECOMPOSERANKMAJOR_H
#define OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_DECOMPOSERANKMAJOR_H

#include "PlannerBridge.h"
#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace overlap {

/// Erases `v`'s defining ops while they are dead, down to a fill and the
/// empty tensors they wrote into (an accumulator that per-tile fills
/// replaced, and the views between it and C). `v` is not used afterwards.
void eraseDeadChain(RewriterBase &rewriter, Value v);

/// X when `a` is X^T, a 2-D linalg.transpose (permutation [1, 0]) of a
/// static tensor on tensors; null otherwise. The rows of such an A are
/// columns of X, which the tiles slice instead of transposing X whole.
Value transposedSource(Value a);

/// The rounding of an all-gather + matmul's f32 result to the factors'
/// f16/bf16 that follows it, when the tiles can round instead (C a +0.0
/// fill; the rounding the result's one user, through `reshape`).
linalg::GenericOp tileRounding(Value result, Value a, Value c,
                               Operation *&reshape);

/// Replaces `rounding` (after `reshape`, if any) by `rounded`.
void replaceRounding(RewriterBase &rewriter, linalg::GenericOp rounding,
                     Operation *reshape, Value rounded);

/// A reduce-scatter matmul as rank-major tiles: per tile a contiguous GEMM
/// of one chunk of the block of rank (r + s) mod G and an `overlap.shift`
/// by s of the partial to that rank, into slot s of a G-slot staging
/// buffer (one `overlap.tiles`); then the G partials of the rank's own
/// rows summed in rank order, in f32, rounded once (as the runtime's
/// reduce-scatter, so the host result is bit-identical).
LogicalResult
decomposeRankMajorReduceScatter(RewriterBase &rewriter,
                                MatmulReduceScatterOp op,
                                const planner::RankMajorLayout &layout,
                                ArrayRef<int64_t> groups);

/// An all-gather matmul as rank-major tiles: step 0 computes the local
/// rows; step s receives block (r + s) mod G's chunk (`overlap.shift` by
/// -s) and computes its contiguous rows of C in place.
LogicalResult
decomposeRankMajorAllGather(RewriterBase &rewriter, AllGatherMatmulOp op,
                            const planner::RankMajorLayout &layout,
                            ArrayRef<int64_t> groups);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_DECOMPOSERANKMAJOR_H

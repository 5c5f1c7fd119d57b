//===- Raise.h - What overlap-raise fuses, and why not -------*- C++ -*-===//
//
// The raise rules, shared by overlap-raise (a remark on each collective it
// leaves) and overlap-check-collectives (an error on each that is left).
// Private to the Transforms library.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_RAISE_H
#define OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_RAISE_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"

#include <string>

namespace mlir {
namespace overlap {

/// Why overlap-raise does not fuse the shard op `op` with a matmul; empty
/// when it would.
std::string whyNotRaised(Operation *op);

/// Why `matmul` cannot be one half of a fused op (tensors, default maps,
/// supported element types, static shapes); empty when it can.
std::string whyNotFusable(linalg::MatmulOp matmul);
std::string whyNotFusable(linalg::BatchMatmulOp matmul);

/// Why overlap-lower-collectives cannot lower the shard op `op` (left
/// unfused) to one unsplit Overlap collective; empty when it can.
std::string whyNotLowered(Operation *op, SymbolTableCollection &symbols);

/// An element type the runtime's collectives take (f32, f16, bf16, f64,
/// i8, i16, i32, i64).
bool isRuntimeElementType(Type type);

/// An all_reduce, all_gather, reduce_scatter or all_to_all whose input and
/// result are both i1 tensors: overlap-lower-collectives runs it on bytes.
bool isBooleanCollective(Operation *op);

/// Replaces the boolean collective `op` with the same collective on i8,
/// between a zero-extension of its input and a truncation of its result
/// (so max is or, min is and, and a sum keeps its low bit, as i1
/// arithmetic wraps); returns the new collective.
Operation *collectiveOnBytes(OpBuilder &b, Operation *op);

/// The shard ops overlap-expand-collectives writes with other collectives
/// (rooted, shift, update_halo), and send/recv, which it refuses.
bool isExpandedCollective(Operation *op);

/// Why overlap-expand-collectives cannot write `op` (an
/// isExpandedCollective op) with the collectives the runtime has; empty
/// when it can.
std::string whyNotExpanded(Operation *op, SymbolTableCollection &symbols);

/// `op`'s replacement, built at `b`'s insertion point (whyNotExpanded(op)
/// must be empty).
Value expandCollective(OpBuilder &b, Operation *op,
                       SymbolTableCollection &symbols);

/// A missed remark on `op`: not raised, and why.
void remarkNotRaised(Operation *op, StringRef why);

/// shard.all_to_all + linalg.matmul / linalg.batch_matmul (dispatch) and
/// the mirror form (combine) under `root` become the fused all-to-all ops;
/// each all-to-all left alone gets a remark (RaiseAllToAll.cpp).
void raiseAllToAll(RewriterBase &rewriter, Operation *root);

/// One all-to-all of raiseAllToAll: true when it became a fused op; else
/// nothing changed (and, with `remark`, a remark says why).
bool raiseAllToAllOp(RewriterBase &rewriter, shard::AllToAllOp a2a,
                     bool remark = true);

/// The first step of overlap-raise (NormalizeContractions.cpp): a
/// contraction next to a shard collective (transposed [n, k] weights,
/// [b, s, k] activations as linalg.generic, linalg.batch_matmul with a
/// broadcast weight, linalg.contract) becomes a 2-D linalg.matmul with
/// default maps between reshapes, and reshapes move across all-reduce,
/// reduce-scatter and all-gather where the blocks stay contiguous.
void populateNormalizeContractionPatterns(RewritePatternSet &patterns);

/// Part of that normalization (MergeGatheredMatmuls.cpp): the matmuls that
/// read one shard.all_gather's result as their left operand become one
/// matmul of their weights side by side along N, placed where the first of
/// them was, each consumer taking its columns.
void populateMergeGatheredMatmulPatterns(RewritePatternSet &patterns);

/// Whether the collapse_shape or transpose `layout` of `gather`'s result
/// may move in front of the gather although the gather has other users (a
/// residual add of a gathered [b, s, h] activation): it is the gather's one
/// layout user and leads to a matmul's left operand. It then gets a gather
/// of its own, which overlap-raise fuses; the other users keep the first.
bool mayHoistLayoutOfSharedGather(shard::AllGatherOp gather, Operation *layout);

/// Part of that normalization (TokenContractions.cpp): a contraction over
/// the leading (token) dims, C[m, n] = sum_t A[t..., m] * B[t..., n] (a
/// weight gradient before its psum or psum_scatter), becomes a 2-D
/// linalg.matmul of linalg.transpose(A) and B, and a transpose of such a
/// product (through the collectives after it) becomes the product with its
/// factors swapped.
void populateTokenContractionPatterns(RewritePatternSet &patterns);

/// Why the shard.all_to_all `op` is not fused; empty when it would be.
std::string whyAllToAllNotRaised(Operation *op);

/// The loop position of an indexing-map result that is a plain dim.
std::optional<unsigned> dimPos(AffineExpr expr);

/// The body of a linalg.generic is exactly `out + ext(a) * ext(b)` (each
/// factor optionally widened by arith.extf), so it computes what
/// linalg.matmul computes.
bool isMatmulBody(Block &body);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_LIB_DIALECT_OVERLAP_TRANSFORMS_RAISE_H

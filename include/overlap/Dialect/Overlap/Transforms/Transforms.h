//===- Transforms.h - Overlap's rewrites as patterns ------------*- C++ -*-===//
//
// The rules of overlap-raise and overlap-decompose as rewrite patterns, for
// an embedder's own passes (as upstream Shard's Transforms.h exposes its
// lowerings). The passes run the same rules in their fixed order and add
// the remarks (why an op was left); the patterns are quiet when they do not
// match and leave the IR unchanged then.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_TRANSFORMS_TRANSFORMS_H
#define OVERLAP_DIALECT_OVERLAP_TRANSFORMS_TRANSFORMS_H

namespace mlir {
class RewritePatternSet;

namespace overlap {

/// overlap-raise's rules: contractions next to a shard collective
/// normalized to 2-D linalg.matmul (transposed weights, [b, s, k]
/// activations, broadcast batch matmuls, linalg.contract); linalg.matmul ->
/// shard.all_reduce / shard.reduce_scatter (rooted at the collective) and
/// shard.all_gather -> linalg.matmul (rooted at the matmul) become the fused
/// ops; shard.all_to_all next to an expert GEMM becomes
/// overlap.all_to_all_matmul or overlap.matmul_all_to_all. The dialects
/// they create (overlap, tensor, linalg) must be loaded.
void populateOverlapRaisePatterns(RewritePatternSet &patterns);

/// overlap-decompose's rule: a fused op with an '#overlap.plan' (from
/// overlap-plan, or set by the caller), static shapes and a static group
/// becomes its tiles (overlap.tiles with one GEMM and one tile collective
/// per tile). A plan that does not fit the op is an error on the op and
/// the pattern fails.
void populateOverlapDecomposePatterns(RewritePatternSet &patterns);

/// overlap-fold-into-gemms' rules: a linalg.matmul / batch_matmul whose
/// operand is a transpose, whose B is a concatenation along N, whose
/// accumulator is a +0.0 fill, or whose f32 result is only rounded to the
/// operands' f16/bf16 becomes an overlap.gemm that reads the operand in
/// place (its transpose flag), one GEMM per piece of B, overwrites (beta
/// 0), or rounds in its epilogue. Bit-identical to what they replace.
void populateOverlapFoldIntoGemmsPatterns(RewritePatternSet &patterns);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_DIALECT_OVERLAP_TRANSFORMS_TRANSFORMS_H

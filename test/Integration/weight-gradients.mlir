// Weight gradients over the tokens, as jax.grad of a Dense layer writes
// them inside a data-parallel (psum / pmean) or FSDP (psum_scatter of the
// rows) training step: overlap-raise normalizes each to a matmul of the
// transposed activations (TokenContractions.cpp), fuses it with its
// collective, and the tiles read the activations' columns in place.
//
// Each entry, split into tiles (uniform:2; the reduce-scatter also
// rank-major), runs on 4 host ranks against the same entry of
// Inputs/weight-gradients-textbook.mlir, written by hand with the
// transpose computed by a plain linalg.generic copy and compiled unsplit:
// neither the normalization nor the column tiles are on the reference's
// path. Sums run over the tokens in the same order: bit-identical.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: overlap-opt %s --overlap-pipeline="strategy=uniform:2" --remarks-filter=overlap -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: for e in xt_dy bs_tokens_pmean jax_grad_scatter jax_grad_bf16 scatter_bf16 matmul_transposed_a; do overlap-compile %s --entry $e --strategy uniform:2 --emit=so -o %t/$e.so && overlap-compile %S/Inputs/weight-gradients-textbook.mlir --entry $e --strategy none --emit=so -o %t/$e.ref.so && overlap-exec %t/$e.so --ref %t/$e.ref.so --ranks 4 | tail -1 || echo "FAILED $e"; done 2>&1 | FileCheck %s
// RUN: for e in jax_grad_scatter scatter_bf16; do overlap-compile %s --entry $e --strategy rank-major --emit=so -o %t/$e.rm.so && overlap-exec %t/$e.rm.so --ref %t/$e.ref.so --ranks 4 | tail -1 || echo "FAILED $e"; done 2>&1 | FileCheck %s --check-prefix=RANKMAJOR
// The check can fail: a gradient that sums x * x is not x^T . dy.
// RUN: sed -e 's/arith.mulf %a, %b : f32/arith.mulf %a, %a : f32/' %s > %t/wrong.mlir
// RUN: overlap-compile %t/wrong.mlir --entry xt_dy --strategy uniform:2 --emit=so -o %t/wrong.so
// RUN: not overlap-exec %t/wrong.so --ref %t/xt_dy.ref.so --ranks 4 | FileCheck %s --check-prefix=WRONG

// REMARK-DAG: Function=xt_dy | Remark="raised to overlap.matmul_all_reduce"
// REMARK-DAG: Function=bs_tokens_pmean | Remark="raised to overlap.matmul_all_reduce"
// REMARK-DAG: Function=jax_grad_scatter | Remark="raised to overlap.matmul_reduce_scatter"
// REMARK-DAG: Function=jax_grad_bf16 | Remark="raised to overlap.matmul_all_reduce"
// REMARK-DAG: Function=scatter_bf16 | Remark="raised to overlap.matmul_reduce_scatter"
// REMARK-DAG: Function=matmul_transposed_a | Remark="raised to overlap.matmul_reduce_scatter"
// REMARK-DAG: Function=xt_dy | Remark="tiles [
// REMARK-DAG: Function=jax_grad_scatter | Remark="tiles [
// REMARK-NOT: not-overlapped

// CHECK-COUNT-6: OK
// CHECK-NOT: FAILED
// RANKMAJOR-COUNT-2: OK
// RANKMAJOR-NOT: FAILED
// WRONG: MISMATCH

shard.grid @dp(shape = 4)

#tm = affine_map<(m, n, t) -> (t, m)>
#tn = affine_map<(m, n, t) -> (t, n)>
#mn = affine_map<(m, n, t) -> (m, n)>
#nt = affine_map<(n, m, t) -> (t, n)>
#mt = affine_map<(n, m, t) -> (t, m)>
#nm = affine_map<(n, m, t) -> (n, m)>
#id2 = affine_map<(i, j) -> (i, j)>
#sc2 = affine_map<(i, j) -> ()>

// x^T . dy (x: [T, K] tokens, dy: [T, N]), then psum.
func.func @xt_dy(%x: tensor<64x96xf32>, %dy: tensor<64x80xf32>) -> tensor<96x80xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %g = linalg.generic {indexing_maps = [#tm, #tn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %dy : tensor<64x96xf32>, tensor<64x80xf32>) outs(%c : tensor<96x80xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<96x80xf32>
  %r = shard.all_reduce %g on @dp grid_axes = [0] : tensor<96x80xf32> -> tensor<96x80xf32>
  return %r : tensor<96x80xf32>
}

// Over [b, s] tokens (flax's Dense on [b, s, K]), then pmean: the psum
// and a division after it.
func.func @bs_tokens_pmean(%x: tensor<4x16x96xf32>, %dy: tensor<4x16x80xf32>) -> tensor<96x80xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(m, n, b, s) -> (b, s, m)>, affine_map<(m, n, b, s) -> (b, s, n)>, affine_map<(m, n, b, s) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x, %dy : tensor<4x16x96xf32>, tensor<4x16x80xf32>) outs(%c : tensor<96x80xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<96x80xf32>
  %r = shard.all_reduce %g on @dp grid_axes = [0] : tensor<96x80xf32> -> tensor<96x80xf32>
  %four = arith.constant dense<4.0> : tensor<f32>
  %e2 = tensor.empty() : tensor<96x80xf32>
  %m = linalg.generic {indexing_maps = [#id2, #sc2, #id2], iterator_types = ["parallel", "parallel"]} ins(%r, %four : tensor<96x80xf32>, tensor<f32>) outs(%e2 : tensor<96x80xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<96x80xf32>
  return %m : tensor<96x80xf32>
}

// jax.grad's form: dot(dy, x) over the tokens ([N, K]), transposed to
// [K, N], then FSDP's psum_scatter of the rows.
func.func @jax_grad_scatter(%dy: tensor<64x80xf32>, %x: tensor<64x96xf32>) -> tensor<24x80xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<80x96xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<80x96xf32>) -> tensor<80x96xf32>
  %g = linalg.generic {indexing_maps = [#nt, #mt, #nm], iterator_types = ["parallel", "parallel", "reduction"]} ins(%dy, %x : tensor<64x80xf32>, tensor<64x96xf32>) outs(%c : tensor<80x96xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<80x96xf32>
  %et = tensor.empty() : tensor<96x80xf32>
  %t = linalg.transpose ins(%g : tensor<80x96xf32>) outs(%et : tensor<96x80xf32>) permutation = [1, 0]
  %r = shard.reduce_scatter %t on @dp grid_axes = [0] scatter_axis = 0 : tensor<96x80xf32> -> tensor<24x80xf32>
  return %r : tensor<24x80xf32>
}

// bf16 as JAX writes it: f32 sums rounded to bf16, transposed, psum'd.
func.func @jax_grad_bf16(%dy: tensor<64x80xbf16>, %x: tensor<64x96xbf16>) -> tensor<96x80xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<80x96xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<80x96xf32>) -> tensor<80x96xf32>
  %g = linalg.generic {indexing_maps = [#nt, #mt, #nm], iterator_types = ["parallel", "parallel", "reduction"]} ins(%dy, %x : tensor<64x80xbf16>, tensor<64x96xbf16>) outs(%c : tensor<80x96xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %a32, %b32 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<80x96xf32>
  %eb = tensor.empty() : tensor<80x96xbf16>
  %rounded = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<80x96xf32>) outs(%eb : tensor<80x96xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<80x96xbf16>
  %et = tensor.empty() : tensor<96x80xbf16>
  %t = linalg.transpose ins(%rounded : tensor<80x96xbf16>) outs(%et : tensor<96x80xbf16>) permutation = [1, 0]
  %r = shard.all_reduce %t on @dp grid_axes = [0] : tensor<96x80xbf16> -> tensor<96x80xbf16>
  return %r : tensor<96x80xbf16>
}

// bf16 x^T . dy rounded, then scattered along the rows: each reduce-scatter
// tile's GEMMs round into their blocks of the packed bf16 buffer.
func.func @scatter_bf16(%x: tensor<64x96xbf16>, %dy: tensor<64x80xbf16>) -> tensor<24x80xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %g = linalg.generic {indexing_maps = [#tm, #tn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %dy : tensor<64x96xbf16>, tensor<64x80xbf16>) outs(%c : tensor<96x80xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %a32, %b32 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<96x80xf32>
  %eb = tensor.empty() : tensor<96x80xbf16>
  %rounded = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<96x80xf32>) outs(%eb : tensor<96x80xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<96x80xbf16>
  %r = shard.reduce_scatter %rounded on @dp grid_axes = [0] scatter_axis = 0 : tensor<96x80xbf16> -> tensor<24x80xbf16>
  return %r : tensor<24x80xbf16>
}

// A transposed-A linalg.matmul accumulating into C (not a fill).
func.func @matmul_transposed_a(%x: tensor<64x96xf32>, %dy: tensor<64x80xf32>, %c: tensor<96x80xf32>) -> tensor<24x80xf32> {
  %g = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %dy : tensor<64x96xf32>, tensor<64x80xf32>) outs(%c : tensor<96x80xf32>) -> tensor<96x80xf32>
  %r = shard.reduce_scatter %g on @dp grid_axes = [0] scatter_axis = 0 : tensor<96x80xf32> -> tensor<24x80xf32>
  return %r : tensor<24x80xf32>
}

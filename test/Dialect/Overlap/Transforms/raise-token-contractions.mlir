// Weight gradients over the tokens (TokenContractions.cpp): C[m, n] =
// sum_t A[t..., m] * B[t..., n] next to a sum collective becomes a matmul
// of linalg.transpose(A) and B, which raises; JAX's transpose of dot(dy, x)
// is folded into the product with its factors swapped. overlap-decompose
// then slices the columns of the untransposed operand per tile and
// overlap-fold-into-gemms reads each with transpose_a: no tile transposes
// its A, and nothing transposes X whole.
//
// RUN: overlap-opt %s --overlap-raise --remarks-filter-missed=overlap -verify-diagnostics | FileCheck %s
// RUN: overlap-opt %s --overlap-raise --overlap-plan=strategy=uniform:2 --overlap-decompose --overlap-fold-into-gemms | FileCheck %s --check-prefix=TILES

shard.grid @dp(shape = 4)

#tm = affine_map<(m, n, t) -> (t, m)>
#tn = affine_map<(m, n, t) -> (t, n)>
#mn = affine_map<(m, n, t) -> (m, n)>

// x^T . dy, then psum.
// CHECK-LABEL: func.func @xt_dy
// CHECK: %[[XT:.*]] = linalg.transpose ins(%arg0 : tensor<16x24xf32>) outs(%{{.*}} : tensor<24x16xf32>) permutation = [1, 0]
// CHECK: overlap.matmul_all_reduce %[[XT]], %arg1, %{{.*}} on @dp grid_axes = [0] : tensor<24x16xf32>, tensor<16x40xf32>, tensor<24x40xf32> -> tensor<24x40xf32>
// CHECK-NOT: shard.all_reduce
// TILES-LABEL: func.func @xt_dy
// TILES-NOT: linalg.transpose
// TILES: overlap.tiles
// TILES: %[[C0:.*]] = tensor.extract_slice %arg0[0, 0] [16, 16] [1, 1] : tensor<16x24xf32> to tensor<16x16xf32>
// TILES: overlap.gemm %[[C0]], %arg1 into %{{.*}} {transpose_a} : tensor<16x16xf32>, tensor<16x40xf32>, tensor<16x40xf32> -> tensor<16x40xf32>
// TILES: overlap.all_reduce
// TILES: %[[C1:.*]] = tensor.extract_slice %arg0[0, 16] [16, 8] [1, 1] : tensor<16x24xf32> to tensor<16x8xf32>
// TILES: overlap.gemm %[[C1]], %arg1 into %{{.*}} {transpose_a} : tensor<16x8xf32>, tensor<16x40xf32>, tensor<8x40xf32> -> tensor<8x40xf32>
// TILES: overlap.all_reduce
// TILES-NOT: linalg.transpose
// TILES: return
func.func @xt_dy(%x: tensor<16x24xf32>, %dy: tensor<16x40xf32>) -> tensor<24x40xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<24x40xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<24x40xf32>) -> tensor<24x40xf32>
  %g = linalg.generic {indexing_maps = [#tm, #tn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %dy : tensor<16x24xf32>, tensor<16x40xf32>) outs(%c : tensor<24x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<24x40xf32>
  %r = shard.all_reduce %g on @dp grid_axes = [0] : tensor<24x40xf32> -> tensor<24x40xf32>
  return %r : tensor<24x40xf32>
}

// flax's Dense kernel gradient over [b, s] tokens, then pmean (a psum and
// a division, which stays after the collective).
// CHECK-LABEL: func.func @bs_tokens_pmean
// CHECK-DAG: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<2x8x24xf32> into tensor<16x24xf32>
// CHECK-DAG: %[[DY:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1], [2]] : tensor<2x8x40xf32> into tensor<16x40xf32>
// CHECK: %[[XT:.*]] = linalg.transpose ins(%[[X]] : tensor<16x24xf32>)
// CHECK: %[[R:.*]] = overlap.matmul_all_reduce %[[XT]], %[[DY]], %{{.*}} on @dp
// CHECK: linalg.generic {{.*}} ins(%[[R]], %{{.*}} : tensor<24x40xf32>, tensor<f32>)
// CHECK: arith.divf
#bsm = affine_map<(m, n, b, s) -> (b, s, m)>
#bsn = affine_map<(m, n, b, s) -> (b, s, n)>
#bmn = affine_map<(m, n, b, s) -> (m, n)>
#id2 = affine_map<(i, j) -> (i, j)>
#sc2 = affine_map<(i, j) -> ()>
func.func @bs_tokens_pmean(%x: tensor<2x8x24xf32>, %dy: tensor<2x8x40xf32>) -> tensor<24x40xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<24x40xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<24x40xf32>) -> tensor<24x40xf32>
  %g = linalg.generic {indexing_maps = [#bsm, #bsn, #bmn], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x, %dy : tensor<2x8x24xf32>, tensor<2x8x40xf32>) outs(%c : tensor<24x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<24x40xf32>
  %r = shard.all_reduce %g on @dp grid_axes = [0] : tensor<24x40xf32> -> tensor<24x40xf32>
  %four = arith.constant dense<4.0> : tensor<f32>
  %e2 = tensor.empty() : tensor<24x40xf32>
  %m = linalg.generic {indexing_maps = [#id2, #sc2, #id2], iterator_types = ["parallel", "parallel"]} ins(%r, %four : tensor<24x40xf32>, tensor<f32>) outs(%e2 : tensor<24x40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<24x40xf32>
  return %m : tensor<24x40xf32>
}

// What jax.grad writes for the kernel of `x @ w`: dot(dy, x) over the
// tokens ([N, K]), transposed to [K, N]; FSDP scatters the rows of w's
// gradient. The transpose becomes the factors swapped, and the
// reduce-scatter cuts the rows of the fused product.
// CHECK-LABEL: func.func @jax_grad_scatter
// CHECK: %[[XT:.*]] = linalg.transpose ins(%arg1 : tensor<16x24xf32>) outs(%{{.*}} : tensor<24x16xf32>) permutation = [1, 0]
// CHECK: overlap.matmul_reduce_scatter %[[XT]], %arg0, %{{.*}} on @dp grid_axes = [0] : tensor<24x16xf32>, tensor<16x40xf32>, tensor<24x40xf32> -> tensor<6x40xf32>
// CHECK-NOT: linalg.transpose
// CHECK: return
// TILES-LABEL: func.func @jax_grad_scatter
// TILES-NOT: linalg.transpose
// Tile 0 takes rows 0..4 of every rank's block of 6: one GEMM per block,
// reading x's columns 6g .. 6g+4 in place.
// TILES: tensor.extract_slice %arg1[0, 0] [16, 4] [1, 1]
// TILES: overlap.gemm %{{.*}}, %arg0 into %{{.*}} {transpose_a} : tensor<16x4xf32>, tensor<16x40xf32>, tensor<4x40xf32> -> tensor<4x40xf32>
// TILES: tensor.extract_slice %arg1[0, 6] [16, 4] [1, 1]
// TILES: tensor.extract_slice %arg1[0, 12] [16, 4] [1, 1]
// TILES: tensor.extract_slice %arg1[0, 18] [16, 4] [1, 1]
// TILES: overlap.reduce_scatter %{{.*}} into %{{.*}} on @dp grid_axes = [0] : tensor<16x40xf32>, tensor<4x40xf32>
// TILES: tensor.extract_slice %arg1[0, 4] [16, 2] [1, 1]
// TILES: tensor.extract_slice %arg1[0, 10] [16, 2] [1, 1]
// TILES: tensor.extract_slice %arg1[0, 16] [16, 2] [1, 1]
// TILES: tensor.extract_slice %arg1[0, 22] [16, 2] [1, 1]
// TILES: overlap.gemm %{{.*}}, %arg0 into %{{.*}} {transpose_a} : tensor<16x2xf32>, tensor<16x40xf32>, tensor<2x40xf32> -> tensor<2x40xf32>
// TILES: overlap.reduce_scatter %{{.*}} into %{{.*}} on @dp grid_axes = [0] : tensor<8x40xf32>, tensor<2x40xf32>
// TILES-NOT: linalg.transpose
// TILES: return
#nt = affine_map<(n, m, t) -> (t, n)>
#mt = affine_map<(n, m, t) -> (t, m)>
#nm = affine_map<(n, m, t) -> (n, m)>
func.func @jax_grad_scatter(%dy: tensor<16x40xf32>, %x: tensor<16x24xf32>) -> tensor<6x40xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<40x24xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<40x24xf32>) -> tensor<40x24xf32>
  %g = linalg.generic {indexing_maps = [#nt, #mt, #nm], iterator_types = ["parallel", "parallel", "reduction"]} ins(%dy, %x : tensor<16x40xf32>, tensor<16x24xf32>) outs(%c : tensor<40x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<40x24xf32>
  %et = tensor.empty() : tensor<24x40xf32>
  %t = linalg.transpose ins(%g : tensor<40x24xf32>) outs(%et : tensor<24x40xf32>) permutation = [1, 0]
  %r = shard.reduce_scatter %t on @dp grid_axes = [0] scatter_axis = 0 : tensor<24x40xf32> -> tensor<6x40xf32>
  return %r : tensor<6x40xf32>
}

// bf16, as JAX writes it: an f32 sum rounded to bf16, transposed, then
// psum'd in bf16. The rounding moves with the transpose; each tile rounds
// in its GEMM's epilogue.
// CHECK-LABEL: func.func @jax_grad_bf16
// CHECK: %[[XT:.*]] = linalg.transpose ins(%arg1 : tensor<16x24xbf16>)
// CHECK: overlap.matmul_all_reduce %[[XT]], %arg0, %{{.*}} on @dp grid_axes = [0] : tensor<24x16xbf16>, tensor<16x40xbf16>, tensor<24x40xf32> -> tensor<24x40xbf16>
// TILES-LABEL: func.func @jax_grad_bf16
// TILES-NOT: linalg.transpose
// TILES: overlap.gemm %{{.*}}, %arg0 into %{{.*}} {transpose_a} : tensor<16x16xbf16>, tensor<16x40xbf16>, tensor<16x40xbf16> -> tensor<16x40xbf16>
// TILES: overlap.all_reduce
// TILES: overlap.gemm %{{.*}}, %arg0 into %{{.*}} {transpose_a} : tensor<16x8xbf16>, tensor<16x40xbf16>, tensor<8x40xbf16> -> tensor<8x40xbf16>
// TILES: overlap.all_reduce
func.func @jax_grad_bf16(%dy: tensor<16x40xbf16>, %x: tensor<16x24xbf16>) -> tensor<24x40xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<40x24xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<40x24xf32>) -> tensor<40x24xf32>
  %g = linalg.generic {indexing_maps = [#nt, #mt, #nm], iterator_types = ["parallel", "parallel", "reduction"]} ins(%dy, %x : tensor<16x40xbf16>, tensor<16x24xbf16>) outs(%c : tensor<40x24xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %a32, %b32 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<40x24xf32>
  %eb = tensor.empty() : tensor<40x24xbf16>
  %rounded = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<40x24xf32>) outs(%eb : tensor<40x24xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<40x24xbf16>
  %et = tensor.empty() : tensor<24x40xbf16>
  %t = linalg.transpose ins(%rounded : tensor<40x24xbf16>) outs(%et : tensor<24x40xbf16>) permutation = [1, 0]
  %r = shard.all_reduce %t on @dp grid_axes = [0] : tensor<24x40xbf16> -> tensor<24x40xbf16>
  return %r : tensor<24x40xbf16>
}

// A linalg.matmul with a transposed A map and an accumulator that is not a
// fill: each reduce-scatter tile copies its rows of C per rank block.
// CHECK-LABEL: func.func @matmul_transposed_a
// CHECK: %[[XT:.*]] = linalg.transpose ins(%arg0 : tensor<16x24xf32>)
// CHECK: overlap.matmul_reduce_scatter %[[XT]], %arg1, %arg2 on @dp grid_axes = [0] : tensor<24x16xf32>, tensor<16x40xf32>, tensor<24x40xf32> -> tensor<6x40xf32>
// TILES-LABEL: func.func @matmul_transposed_a
// TILES-NOT: linalg.transpose
// TILES: %[[C:.*]] = tensor.extract_slice %arg2[6, 0] [4, 40] [1, 1]
// TILES: %[[INIT:.*]] = linalg.copy ins(%[[C]] : tensor<4x40xf32>)
// TILES: %[[A:.*]] = tensor.extract_slice %arg0[0, 6] [16, 4] [1, 1]
// TILES: overlap.gemm %[[A]], %arg1 into %[[INIT]] {accumulate, transpose_a} : tensor<16x4xf32>, tensor<16x40xf32>, tensor<4x40xf32> -> tensor<4x40xf32>
func.func @matmul_transposed_a(%x: tensor<16x24xf32>, %dy: tensor<16x40xf32>, %c: tensor<24x40xf32>) -> tensor<6x40xf32> {
  %g = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %dy : tensor<16x24xf32>, tensor<16x40xf32>) outs(%c : tensor<24x40xf32>) -> tensor<24x40xf32>
  %r = shard.reduce_scatter %g on @dp grid_axes = [0] scatter_axis = 0 : tensor<24x40xf32> -> tensor<6x40xf32>
  return %r : tensor<6x40xf32>
}

// Not next to a collective: left as written.
// CHECK-LABEL: func.func @alone
// CHECK-NOT: linalg.matmul
// CHECK: linalg.generic
func.func @alone(%x: tensor<16x24xf32>, %dy: tensor<16x40xf32>, %c: tensor<24x40xf32>) -> tensor<24x40xf32> {
  %g = linalg.generic {indexing_maps = [#tm, #tn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %dy : tensor<16x24xf32>, tensor<16x40xf32>) outs(%c : tensor<24x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<24x40xf32>
  return %g : tensor<24x40xf32>
}

// A body that is not a product-sum is no contraction.
// CHECK-LABEL: func.func @not_a_product
// CHECK: linalg.generic
// CHECK: arith.subf
// CHECK: shard.all_reduce
func.func @not_a_product(%x: tensor<16x24xf32>, %dy: tensor<16x40xf32>, %c: tensor<24x40xf32>) -> tensor<24x40xf32> {
  %g = linalg.generic {indexing_maps = [#tm, #tn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %dy : tensor<16x24xf32>, tensor<16x40xf32>) outs(%c : tensor<24x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.subf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<24x40xf32>
  %r = shard.all_reduce %g on @dp grid_axes = [0] : tensor<24x40xf32> -> tensor<24x40xf32>
  return %r : tensor<24x40xf32>
}

// jnp's `(dy.T @ x).T` then psum_scatter: the transpose of dy is an op and
// the contraction a plain one of it; the reduce-scatter (moved before the
// outer transpose, along axis 1) then cuts x's columns. It becomes the
// matmul of the transposed operand, then the product with its factors
// swapped: x^T . dy, scattered along its rows.
// CHECK-LABEL: func.func @dyT_x_T_scatter
// CHECK: %[[XT:.*]] = linalg.transpose ins(%arg1 : tensor<16x24xf32>) outs(%{{.*}} : tensor<24x16xf32>) permutation = [1, 0]
// CHECK: overlap.matmul_reduce_scatter %[[XT]], %arg0, %{{.*}} on @dp grid_axes = [0] : tensor<24x16xf32>, tensor<16x40xf32>, tensor<24x40xf32> -> tensor<6x40xf32>
// CHECK-NOT: linalg.transpose
// CHECK: return
#mk = affine_map<(m, n, k) -> (m, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn2 = affine_map<(m, n, k) -> (m, n)>
func.func @dyT_x_T_scatter(%dy: tensor<16x40xf32>, %x: tensor<16x24xf32>) -> tensor<6x40xf32> {
  %ed = tensor.empty() : tensor<40x16xf32>
  %dyt = linalg.transpose ins(%dy : tensor<16x40xf32>) outs(%ed : tensor<40x16xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<40x24xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<40x24xf32>) -> tensor<40x24xf32>
  %g = linalg.generic {indexing_maps = [#mk, #kn, #mn2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%dyt, %x : tensor<40x16xf32>, tensor<16x24xf32>) outs(%c : tensor<40x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<40x24xf32>
  %et = tensor.empty() : tensor<24x40xf32>
  %t = linalg.transpose ins(%g : tensor<40x24xf32>) outs(%et : tensor<24x40xf32>) permutation = [1, 0]
  %r = shard.reduce_scatter %t on @dp grid_axes = [0] scatter_axis = 0 : tensor<24x40xf32> -> tensor<6x40xf32>
  return %r : tensor<6x40xf32>
}

// linalg.contract over the tokens, into an accumulator argument.
// CHECK-LABEL: func.func @contract_tokens
// CHECK: %[[XT:.*]] = linalg.transpose ins(%arg0 : tensor<16x24xf32>)
// CHECK: overlap.matmul_all_reduce %[[XT]], %arg1, %arg2 on @dp
func.func @contract_tokens(%x: tensor<16x24xf32>, %dy: tensor<16x40xf32>, %c: tensor<24x40xf32>) -> tensor<24x40xf32> {
  %g = linalg.contract indexing_maps = [#tm, #tn, #mn]
      ins(%x, %dy : tensor<16x24xf32>, tensor<16x40xf32>) outs(%c : tensor<24x40xf32>) -> tensor<24x40xf32>
  %r = shard.all_reduce %g on @dp grid_axes = [0] : tensor<24x40xf32> -> tensor<24x40xf32>
  return %r : tensor<24x40xf32>
}

// RUN: overlap-opt %s --overlap-raise | FileCheck %s

// The contractions flax, nnx, equinox and JAX's einsum write next to a
// collective with several free or contracted dims, or with the tokens as
// the second operand, normalized to the 2-D (or batched) GEMM the fused
// ops take.

shard.grid @tp(shape = 4)

// Attention's output projection with the heads kept (flax DenseGeneral
// with axis=(-2, -1); JAX's einsum 'bshd,hdn->bsn' contracts d before h):
// two contracted dims, flattened in A's memory order into one K = h*d,
// and fused with the psum of the heads-sharded partial sums.
// CHECK-LABEL: func.func @heads_out_psum
// CHECK: %[[A:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2, 3]] : tensor<2x16x2x8xf32> into tensor<32x16xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<2x16x32xf32> into tensor<32x32xf32>
// CHECK: %[[B:.*]] = tensor.collapse_shape %arg1 {{\[}}[0, 1], [2]] : tensor<2x8x32xf32> into tensor<16x32xf32>
// CHECK: %[[R:.*]] = overlap.matmul_all_reduce %[[A]], %[[B]], %[[C]] on @tp grid_axes = [0] : tensor<32x16xf32>, tensor<16x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[R]] {{\[}}[0, 1], [2]] output_shape [2, 16, 32]
// CHECK-NEXT: return %[[E]]
func.func @heads_out_psum(%o: tensor<2x16x2x8xf32>, %w: tensor<2x8x32xf32>) -> tensor<2x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b, s, n, d, h) -> (b, s, h, d)>, affine_map<(b, s, n, d, h) -> (h, d, n)>, affine_map<(b, s, n, d, h) -> (b, s, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%o, %w : tensor<2x16x2x8xf32>, tensor<2x8x32xf32>) outs(%c : tensor<2x16x32xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<2x16x32xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<2x16x32xf32> -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// The same in bf16 with the rounding before a sequence-parallel
// reduce-scatter along s (b = 2 before it): s goes first, so each rank's
// block is whole rows of the flattened product.
// CHECK-LABEL: func.func @heads_out_scatter_bf16
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<2x16x2x8xbf16>) outs(%{{.*}} : tensor<16x2x2x8xbf16>) permutation = [1, 0, 2, 3]
// CHECK: %[[A:.*]] = tensor.collapse_shape %[[T]] {{\[}}[0, 1], [2, 3]] : tensor<16x2x2x8xbf16> into tensor<32x16xbf16>
// CHECK: %[[S:.*]] = overlap.matmul_reduce_scatter %[[A]], %{{.*}}, %{{.*}} on @tp grid_axes = [0] : tensor<32x16xbf16>, tensor<16x32xbf16>, tensor<32x32xf32> -> tensor<8x32xbf16>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[S]] {{\[}}[0, 1], [2]] output_shape [4, 2, 32] : tensor<8x32xbf16> into tensor<4x2x32xbf16>
// CHECK: linalg.transpose ins(%[[E]] : tensor<4x2x32xbf16>) outs(%{{.*}} : tensor<2x4x32xbf16>) permutation = [1, 0, 2]
func.func @heads_out_scatter_bf16(%o: tensor<2x16x2x8xbf16>, %w: tensor<2x8x32xbf16>) -> tensor<2x4x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b, s, n, h, d) -> (b, s, h, d)>, affine_map<(b, s, n, h, d) -> (h, d, n)>, affine_map<(b, s, n, h, d) -> (b, s, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%o, %w : tensor<2x16x2x8xbf16>, tensor<2x8x32xbf16>) outs(%c : tensor<2x16x32xf32>) {
    ^bb0(%a: bf16, %b: bf16, %acc: f32):
      %a32 = arith.extf %a : bf16 to f32
      %b32 = arith.extf %b : bf16 to f32
      %m = arith.mulf %a32, %b32 : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<2x16x32xf32>
  %eh = tensor.empty() : tensor<2x16x32xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, k)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p : tensor<2x16x32xf32>) outs(%eh : tensor<2x16x32xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<2x16x32xbf16>
  %r = shard.reduce_scatter %h on @tp grid_axes = [0] scatter_axis = 1 : tensor<2x16x32xbf16> -> tensor<2x4x32xbf16>
  return %r : tensor<2x4x32xbf16>
}

// Megatron's [s, b, h, d] as a linalg.contract, reduce-scattered along s
// (dim 0): no transpose, the blocks are whole rows already.
// CHECK-LABEL: func.func @heads_out_contract_sbh
// CHECK-NOT: linalg.transpose
// CHECK: %[[S:.*]] = overlap.matmul_reduce_scatter %{{.*}}, %{{.*}}, %{{.*}} on @tp grid_axes = [0] : tensor<32x16xf32>, tensor<16x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
// CHECK: tensor.expand_shape %[[S]] {{\[}}[0, 1], [2]] output_shape [4, 2, 32] : tensor<8x32xf32> into tensor<4x2x32xf32>
func.func @heads_out_contract_sbh(%o: tensor<16x2x2x8xf32>, %w: tensor<2x8x32xf32>, %c: tensor<16x2x32xf32>) -> tensor<4x2x32xf32> {
  %p = linalg.contract indexing_maps = [affine_map<(s, b, n, h, d) -> (s, b, h, d)>, affine_map<(s, b, n, h, d) -> (h, d, n)>, affine_map<(s, b, n, h, d) -> (s, b, n)>]
      ins(%o, %w : tensor<16x2x2x8xf32>, tensor<2x8x32xf32>) outs(%c : tensor<16x2x32xf32>) -> tensor<16x2x32xf32>
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 0 : tensor<16x2x32xf32> -> tensor<4x2x32xf32>
  return %r : tensor<4x2x32xf32>
}

// The Q/K/V projection 'bsn,nhd->bshd' of the gathered sequence: the
// weight's two free dims flattened into N = h*d, and the gather (b = 1)
// feeds the GEMM.
// CHECK-LABEL: func.func @gathered_heads_in
// CHECK: %[[L:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<1x4x32xf32> into tensor<4x32xf32>
// CHECK: %[[B:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2]] : tensor<32x2x8xf32> into tensor<32x16xf32>
// CHECK: %[[P:.*]] = overlap.all_gather_matmul %[[L]], %[[B]], %{{.*}} on @tp grid_axes = [0] : tensor<4x32xf32>, tensor<32x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
// CHECK: tensor.expand_shape %[[P]] {{\[}}[0, 1], [2, 3]] output_shape [1, 16, 2, 8]
func.func @gathered_heads_in(%x: tensor<1x4x32xf32>, %w: tensor<32x2x8xf32>) -> tensor<1x16x2x8xf32> {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 1 : tensor<1x4x32xf32> -> tensor<1x16x32xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x2x8xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x2x8xf32>) -> tensor<1x16x2x8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b, s, h, d, n) -> (b, s, n)>, affine_map<(b, s, h, d, n) -> (n, h, d)>, affine_map<(b, s, h, d, n) -> (b, s, h, d)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%g, %w : tensor<1x16x32xf32>, tensor<32x2x8xf32>) outs(%c : tensor<1x16x2x8xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<1x16x2x8xf32>
  return %p : tensor<1x16x2x8xf32>
}

// equinox's jax.vmap(lambda t: w @ t) of gathered tokens: JAX computes
// [out, tokens] and transposes it. The gathered operand (input 1) becomes
// the rows, the [out, in] weight is read transposed, and the product comes
// out [tokens, out]: the two transposes cancel.
// CHECK-LABEL: func.func @vmapped_linear_gather
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<64x24xf32>)
// CHECK: %[[W:.*]] = linalg.transpose ins(%arg1 : tensor<24x32xf32>) outs(%{{.*}} : tensor<32x24xf32>) permutation = [1, 0]
// CHECK: %[[P:.*]] = overlap.all_gather_matmul %arg0, %[[W]], %[[F]] on @tp grid_axes = [0] : tensor<16x32xf32>, tensor<32x24xf32>, tensor<64x24xf32> -> tensor<64x24xf32>
// CHECK-NEXT: return %[[P]]
func.func @vmapped_linear_gather(%x: tensor<16x32xf32>, %w: tensor<24x32xf32>) -> tensor<64x24xf32> {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<16x32xf32> -> tensor<64x32xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<24x64xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<24x64xf32>) -> tensor<24x64xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(o, t, i) -> (o, i)>, affine_map<(o, t, i) -> (t, i)>, affine_map<(o, t, i) -> (o, t)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %g : tensor<24x32xf32>, tensor<64x32xf32>) outs(%c : tensor<24x64xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<24x64xf32>
  %et = tensor.empty() : tensor<64x24xf32>
  %t = linalg.transpose ins(%p : tensor<24x64xf32>) outs(%et : tensor<64x24xf32>) permutation = [1, 0]
  return %t : tensor<64x24xf32>
}

// The vmapped linear before a reduce-scatter of the tokens: the tokens'
// side (the dim the collective cuts) gives the rows.
// CHECK-LABEL: func.func @vmapped_linear_scatter
// CHECK: %[[W:.*]] = linalg.transpose ins(%arg1 : tensor<24x32xf32>)
// CHECK: %[[R:.*]] = overlap.matmul_reduce_scatter %arg0, %[[W]], %{{.*}} on @tp grid_axes = [0] : tensor<64x32xf32>, tensor<32x24xf32>, tensor<64x24xf32> -> tensor<16x24xf32>
// CHECK-NEXT: return %[[R]]
func.func @vmapped_linear_scatter(%x: tensor<64x32xf32>, %w: tensor<24x32xf32>) -> tensor<16x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<24x64xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<24x64xf32>) -> tensor<24x64xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(o, t, i) -> (o, i)>, affine_map<(o, t, i) -> (t, i)>, affine_map<(o, t, i) -> (o, t)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<24x32xf32>, tensor<64x32xf32>) outs(%c : tensor<24x64xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<24x64xf32>
  %et = tensor.empty() : tensor<64x24xf32>
  %t = linalg.transpose ins(%p : tensor<24x64xf32>) outs(%et : tensor<64x24xf32>) permutation = [1, 0]
  %r = shard.reduce_scatter %t on @tp grid_axes = [0] scatter_axis = 0 : tensor<64x24xf32> -> tensor<16x24xf32>
  return %r : tensor<16x24xf32>
}

// The same in bf16: the rounding between the product and the frontend's
// transpose moves with the transposes, which cancel.
// CHECK-LABEL: func.func @vmapped_linear_scatter_bf16
// CHECK: %[[W:.*]] = linalg.transpose ins(%arg1 : tensor<24x32xbf16>)
// CHECK-NOT: linalg.transpose
// CHECK: %[[R:.*]] = overlap.matmul_reduce_scatter %arg0, %[[W]], %{{.*}} on @tp grid_axes = [0] : tensor<64x32xbf16>, tensor<32x24xbf16>, tensor<64x24xf32> -> tensor<16x24xbf16>
// CHECK-NEXT: return %[[R]]
func.func @vmapped_linear_scatter_bf16(%x: tensor<64x32xbf16>, %w: tensor<24x32xbf16>) -> tensor<16x24xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<24x64xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<24x64xf32>) -> tensor<24x64xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(o, t, i) -> (o, i)>, affine_map<(o, t, i) -> (t, i)>, affine_map<(o, t, i) -> (o, t)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %x : tensor<24x32xbf16>, tensor<64x32xbf16>) outs(%c : tensor<24x64xf32>) {
    ^bb0(%a: bf16, %b: bf16, %acc: f32):
      %a32 = arith.extf %a : bf16 to f32
      %b32 = arith.extf %b : bf16 to f32
      %m = arith.mulf %a32, %b32 : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<24x64xf32>
  %eh = tensor.empty() : tensor<24x64xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<24x64xf32>) outs(%eh : tensor<24x64xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<24x64xbf16>
  %et = tensor.empty() : tensor<64x24xbf16>
  %t = linalg.transpose ins(%h : tensor<24x64xbf16>) outs(%et : tensor<64x24xbf16>) permutation = [1, 0]
  %r = shard.reduce_scatter %t on @tp grid_axes = [0] scatter_axis = 0 : tensor<64x24xbf16> -> tensor<16x24xbf16>
  return %r : tensor<16x24xbf16>
}

// eqx.filter_vmap experts: a vmap over experts of per-token vmapped
// linears is a batched contraction [e, out, tokens] then a transpose.
// Normalized to linalg.batch_matmul with the tokens as rows, fused with
// the dispatch and the combine all-to-alls.
// CHECK-LABEL: func.func @vmapped_experts
// CHECK: %[[W1:.*]] = linalg.transpose ins(%arg1 : tensor<2x48x32xbf16>) outs(%{{.*}} : tensor<2x32x48xbf16>) permutation = [0, 2, 1]
// CHECK: %[[H:.*]] = overlap.all_to_all_matmul %arg0, %[[W1]], %{{.*}} on @tp grid_axes = [0] : tensor<8x16x32xbf16>, tensor<2x32x48xbf16>, tensor<2x64x48xf32> -> tensor<2x64x48xf32>
// CHECK: %[[W2:.*]] = linalg.transpose ins(%arg2 : tensor<2x32x48xf32>) outs(%{{.*}} : tensor<2x48x32xf32>) permutation = [0, 2, 1]
// CHECK: %[[R:.*]] = overlap.matmul_all_to_all %[[H]], %[[W2]], %{{.*}} on @tp grid_axes = [0] : tensor<2x64x48xf32>, tensor<2x48x32xf32>, tensor<2x64x32xf32> -> tensor<8x16x32xf32>
// CHECK-NEXT: return %[[R]]
func.func @vmapped_experts(%x: tensor<8x16x32xbf16>, %w1: tensor<2x48x32xbf16>, %w2: tensor<2x32x48xf32>) -> tensor<8x16x32xf32> {
  %d = shard.all_to_all %x on @tp grid_axes = [0] split_axis = 0 concat_axis = 1 : tensor<8x16x32xbf16> -> tensor<2x64x32xbf16>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x48x64xf32>
  %c1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x48x64xf32>) -> tensor<2x48x64xf32>
  %p1 = linalg.generic {indexing_maps = [affine_map<(e, o, t, i) -> (e, o, i)>, affine_map<(e, o, t, i) -> (e, t, i)>, affine_map<(e, o, t, i) -> (e, o, t)>],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w1, %d : tensor<2x48x32xbf16>, tensor<2x64x32xbf16>) outs(%c1 : tensor<2x48x64xf32>) {
    ^bb0(%a: bf16, %b: bf16, %acc: f32):
      %a32 = arith.extf %a : bf16 to f32
      %b32 = arith.extf %b : bf16 to f32
      %m = arith.mulf %a32, %b32 : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<2x48x64xf32>
  %et1 = tensor.empty() : tensor<2x64x48xf32>
  %h = linalg.transpose ins(%p1 : tensor<2x48x64xf32>) outs(%et1 : tensor<2x64x48xf32>) permutation = [0, 2, 1]
  %e2 = tensor.empty() : tensor<2x32x64xf32>
  %c2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x32x64xf32>) -> tensor<2x32x64xf32>
  %p2 = linalg.generic {indexing_maps = [affine_map<(e, o, t, i) -> (e, o, i)>, affine_map<(e, o, t, i) -> (e, t, i)>, affine_map<(e, o, t, i) -> (e, o, t)>],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%w2, %h : tensor<2x32x48xf32>, tensor<2x64x48xf32>) outs(%c2 : tensor<2x32x64xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<2x32x64xf32>
  %et2 = tensor.empty() : tensor<2x64x32xf32>
  %t2 = linalg.transpose ins(%p2 : tensor<2x32x64xf32>) outs(%et2 : tensor<2x64x32xf32>) permutation = [0, 2, 1]
  %r = shard.all_to_all %t2 on @tp grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x64x32xf32> -> tensor<8x16x32xf32>
  return %r : tensor<8x16x32xf32>
}

// A gathered input 1 whose gathered dim is contracted (a weight gathered
// along its input features) does not give the rows: left as it is.
// CHECK-LABEL: func.func @gathered_weight_contracted
// CHECK: shard.all_gather
// CHECK: linalg.generic
func.func @gathered_weight_contracted(%x: tensor<64x32xf32>, %w: tensor<8x24xf32>) -> tensor<64x24xf32> {
  %g = shard.all_gather %w on @tp grid_axes = [0] gather_axis = 0 : tensor<8x24xf32> -> tensor<32x24xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x24xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x24xf32>) -> tensor<64x24xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(t, o, i) -> (t, i)>, affine_map<(t, o, i) -> (i, o)>, affine_map<(t, o, i) -> (t, o)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %g : tensor<64x32xf32>, tensor<32x24xf32>) outs(%c : tensor<64x24xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<64x24xf32>
  return %p : tensor<64x24xf32>
}

// With no collective beside it, a contraction keeps its form.
// CHECK-LABEL: func.func @heads_out_no_collective
// CHECK: linalg.generic
// CHECK-NOT: linalg.matmul
func.func @heads_out_no_collective(%o: tensor<2x16x2x8xf32>, %w: tensor<2x8x32xf32>, %c: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  %p = linalg.generic {indexing_maps = [affine_map<(b, s, n, h, d) -> (b, s, h, d)>, affine_map<(b, s, n, h, d) -> (h, d, n)>, affine_map<(b, s, n, h, d) -> (b, s, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%o, %w : tensor<2x16x2x8xf32>, tensor<2x8x32xf32>) outs(%c : tensor<2x16x32xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<2x16x32xf32>
  return %p : tensor<2x16x32xf32>
}

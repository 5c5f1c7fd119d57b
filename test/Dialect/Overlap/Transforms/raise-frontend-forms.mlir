// RUN: overlap-opt %s --overlap-raise | FileCheck %s

// overlap-raise first normalizes the contractions frontends write next to
// a collective into the textbook 2-D linalg.matmul, then fuses the pair.

shard.grid @tp(shape = 4)

// PyTorch-layout weight: transposed once, then the textbook pair.
// CHECK-LABEL: func.func @torch_rowpar
// CHECK: %[[WT:.*]] = linalg.transpose ins(%arg1 : tensor<32x64xf32>) outs(%{{.*}} : tensor<64x32xf32>) permutation = [1, 0]
// CHECK: %[[R:.*]] = overlap.matmul_all_reduce %arg0, %[[WT]], %{{.*}} on @tp grid_axes = [0] : tensor<256x64xf32>, tensor<64x32xf32>, tensor<256x32xf32> -> tensor<256x32xf32>
// CHECK-NEXT: return %[[R]]
func.func @torch_rowpar(%x: tensor<256x64xf32>, %w: tensor<32x64xf32>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<256x64xf32>, tensor<32x64xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

// [b, s, k] x [k, n] as a linalg.generic (bf16 factors widened to f32):
// flattened to rows, fused, and reshaped back after the reduce-scatter
// along the batch (blocks of whole rows).
// CHECK-LABEL: func.func @bsh_scatter
// CHECK: %[[A:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<8x32x64xbf16> into tensor<256x64xbf16>
// CHECK: %[[C:.*]] = tensor.collapse_shape %arg2 {{\[}}[0, 1], [2]] : tensor<8x32x32xf32> into tensor<256x32xf32>
// CHECK: %[[S:.*]] = overlap.matmul_reduce_scatter %[[A]], %arg1, %[[C]] on @tp grid_axes = [0] : tensor<256x64xbf16>, tensor<64x32xbf16>, tensor<256x32xf32> -> tensor<64x32xf32>
// CHECK: tensor.expand_shape %[[S]] {{\[}}[0, 1], [2]] output_shape [2, 32, 32] : tensor<64x32xf32> into tensor<2x32x32xf32>
func.func @bsh_scatter(%x: tensor<8x32x64xbf16>, %w: tensor<64x32xbf16>, %c: tensor<8x32x32xf32>) -> tensor<2x32x32xf32> {
  %p = linalg.generic {indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (k, n)>, affine_map<(b, s, n, k) -> (b, s, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x32x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<8x32x32xf32>) {
    ^bb0(%a: bf16, %b: bf16, %acc: f32):
      %a32 = arith.extf %a : bf16 to f32
      %b32 = arith.extf %b : bf16 to f32
      %m = arith.mulf %a32, %b32 : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<8x32x32xf32>
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 0 : tensor<8x32x32xf32> -> tensor<2x32x32xf32>
  return %r : tensor<2x32x32xf32>
}

// Megatron's [s, b, h] gathered along the sequence and collapsed: the
// collapse moves before the gather, which then feeds the matmul.
// CHECK-LABEL: func.func @sbh_gather
// CHECK: %[[L:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<32x2x64xf32> into tensor<64x64xf32>
// CHECK: overlap.all_gather_matmul %[[L]], %arg1, %arg2 on @tp grid_axes = [0] : tensor<64x64xf32>, tensor<64x32xf32>, tensor<256x32xf32> -> tensor<256x32xf32>
func.func @sbh_gather(%x: tensor<32x2x64xf32>, %w: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<32x2x64xf32> -> tensor<128x2x64xf32>
  %rows = tensor.collapse_shape %g [[0, 1], [2]] : tensor<128x2x64xf32> into tensor<256x64xf32>
  %p = linalg.matmul ins(%rows, %w : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  return %p : tensor<256x32xf32>
}

// A generic whose body is not a matmul's is left alone.
// CHECK-LABEL: func.func @not_a_matmul
// CHECK: linalg.generic
// CHECK: shard.all_reduce
func.func @not_a_matmul(%x: tensor<2x8x4xf32>, %w: tensor<4x4xf32>, %c: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %p = linalg.generic {indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (k, n)>, affine_map<(b, s, n, k) -> (b, s, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<2x8x4xf32>, tensor<4x4xf32>) outs(%c : tensor<2x8x4xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %a : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<2x8x4xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  return %r : tensor<2x8x4xf32>
}

// A rounding to bf16 between the matmul and the all-reduce (JAX's psum of
// a bf16 product): fused, with the bf16 result type.
// CHECK-LABEL: func.func @cast_before_psum
// CHECK: %[[R:.*]] = overlap.matmul_all_reduce %arg0, %arg1, %arg2 on @tp grid_axes = [0] : tensor<256x64xbf16>, tensor<64x32xbf16>, tensor<256x32xf32> -> tensor<256x32xbf16>
// CHECK-NEXT: return %[[R]]
func.func @cast_before_psum(%x: tensor<256x64xbf16>, %w: tensor<64x32xbf16>, %c: tensor<256x32xf32>) -> tensor<256x32xbf16> {
  %p = linalg.matmul ins(%x, %w : tensor<256x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %eh = tensor.empty() : tensor<256x32xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<256x32xf32>) outs(%eh : tensor<256x32xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<256x32xbf16>
  %r = shard.all_reduce %h on @tp grid_axes = [0] : tensor<256x32xbf16> -> tensor<256x32xbf16>
  return %r : tensor<256x32xbf16>
}

// A rounding with another user stays: the all-reduce is not fused.
// CHECK-LABEL: func.func @cast_used_twice
// CHECK: linalg.matmul
// CHECK: shard.all_reduce
func.func @cast_used_twice(%x: tensor<256x64xbf16>, %w: tensor<64x32xbf16>, %c: tensor<256x32xf32>) -> (tensor<256x32xbf16>, tensor<256x32xbf16>) {
  %p = linalg.matmul ins(%x, %w : tensor<256x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %eh = tensor.empty() : tensor<256x32xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<256x32xf32>) outs(%eh : tensor<256x32xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<256x32xbf16>
  %r = shard.all_reduce %h on @tp grid_axes = [0] : tensor<256x32xbf16> -> tensor<256x32xbf16>
  return %r, %h : tensor<256x32xbf16>, tensor<256x32xbf16>
}

// One gather, gate and up projections: the weights side by side along N,
// one fused all_gather_matmul, each projection its columns.
// CHECK-LABEL: func.func @gate_up
// CHECK: %[[W0:.*]] = tensor.insert_slice %arg1 into %{{.*}}[0, 0] [64, 32] [1, 1] : tensor<64x32xf32> into tensor<64x96xf32>
// CHECK: %[[W1:.*]] = tensor.insert_slice %arg2 into %[[W0]][0, 32] [64, 64] [1, 1] : tensor<64x64xf32> into tensor<64x96xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<256x96xf32>)
// CHECK: %[[P:.*]] = overlap.all_gather_matmul %arg0, %[[W1]], %[[F]] on @tp grid_axes = [0] : tensor<64x64xf32>, tensor<64x96xf32>, tensor<256x96xf32> -> tensor<256x96xf32>
// CHECK: %[[G:.*]] = tensor.extract_slice %[[P]][0, 0] [256, 32] [1, 1]
// CHECK: %[[U:.*]] = tensor.extract_slice %[[P]][0, 32] [256, 64] [1, 1]
// CHECK: return %[[G]], %[[U]]
func.func @gate_up(%x: tensor<64x64xf32>, %wg: tensor<64x32xf32>, %wu: tensor<64x64xf32>) -> (tensor<256x32xf32>, tensor<256x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xf32> -> tensor<256x64xf32>
  %e1 = tensor.empty() : tensor<256x32xf32>
  %c1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<256x32xf32>) -> tensor<256x32xf32>
  %pg = linalg.matmul ins(%g, %wg : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c1 : tensor<256x32xf32>) -> tensor<256x32xf32>
  %e2 = tensor.empty() : tensor<256x64xf32>
  %c2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<256x64xf32>) -> tensor<256x64xf32>
  %pu = linalg.matmul ins(%g, %wu : tensor<256x64xf32>, tensor<64x64xf32>) outs(%c2 : tensor<256x64xf32>) -> tensor<256x64xf32>
  return %pg, %pu : tensor<256x32xf32>, tensor<256x64xf32>
}

// A gather whose rows are also returned: the matmul is fused, the return
// keeps a plain gather of the rows, after the fused op.
// CHECK-LABEL: func.func @gather_and_other
// CHECK: %[[P:.*]] = overlap.all_gather_matmul %arg0, %arg1, %arg2
// CHECK: %[[G:.*]] = shard.all_gather %arg0
// CHECK: return %[[P]], %[[G]]
func.func @gather_and_other(%x: tensor<64x64xf32>, %wg: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> (tensor<256x32xf32>, tensor<256x64xf32>) {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xf32> -> tensor<256x64xf32>
  %pg = linalg.matmul ins(%g, %wg : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  return %pg, %g : tensor<256x32xf32>, tensor<256x64xf32>
}

// A cast after the gather moves before it (each rank rounds its own rows,
// the gather moves bf16), and the gather meets the matmul.
// CHECK-LABEL: func.func @round_after_gather
// CHECK: %[[L:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<64x64xf32>) outs(%{{.*}} : tensor<64x64xbf16>)
// CHECK: overlap.all_gather_matmul %[[L]], %arg1, %arg2 on @tp grid_axes = [0] : tensor<64x64xbf16>, tensor<64x32xbf16>, tensor<256x32xf32> -> tensor<256x32xf32>
func.func @round_after_gather(%x: tensor<64x64xf32>, %w: tensor<64x32xbf16>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xf32> -> tensor<256x64xf32>
  %eh = tensor.empty() : tensor<256x64xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<256x64xf32>) outs(%eh : tensor<256x64xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<256x64xbf16>
  %p = linalg.matmul ins(%h, %w : tensor<256x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  return %p : tensor<256x32xf32>
}

// A widening cast after the gather stays after it (moving it would double
// the bytes on the wire): the gather is not fused.
// CHECK-LABEL: func.func @widen_after_gather
// CHECK: shard.all_gather %arg0
// CHECK: arith.extf
// CHECK: linalg.matmul
func.func @widen_after_gather(%x: tensor<64x64xbf16>, %w: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xbf16> -> tensor<256x64xbf16>
  %eh = tensor.empty() : tensor<256x64xf32>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<256x64xbf16>) outs(%eh : tensor<256x64xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %t = arith.extf %in : bf16 to f32
      linalg.yield %t : f32
  } -> tensor<256x64xf32>
  %p = linalg.matmul ins(%h, %w : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  return %p : tensor<256x32xf32>
}

// Sequence parallelism on [b, s, h] with b > 1: the reduce-scatter along s
// cuts blocks strided in the [b * s] rows, so A and C are transposed to
// [s, b, .] first, the pair is fused on those rows, and the result is
// transposed back.
// CHECK-LABEL: func.func @seq_scatter_b2
// CHECK: %[[AT:.*]] = linalg.transpose ins(%arg0 : tensor<2x128x64xf32>) outs(%{{.*}} : tensor<128x2x64xf32>) permutation = [1, 0, 2]
// CHECK: %[[CT:.*]] = linalg.transpose ins(%arg2 : tensor<2x128x32xf32>) outs(%{{.*}} : tensor<128x2x32xf32>) permutation = [1, 0, 2]
// CHECK: %[[A:.*]] = tensor.collapse_shape %[[AT]] {{\[}}[0, 1], [2]] : tensor<128x2x64xf32> into tensor<256x64xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[CT]] {{\[}}[0, 1], [2]] : tensor<128x2x32xf32> into tensor<256x32xf32>
// CHECK: %[[S:.*]] = overlap.matmul_reduce_scatter %[[A]], %arg1, %[[C]] on @tp grid_axes = [0] : tensor<256x64xf32>, tensor<64x32xf32>, tensor<256x32xf32> -> tensor<64x32xf32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[S]] {{\[}}[0, 1], [2]] output_shape [32, 2, 32]
// CHECK: linalg.transpose ins(%[[E]] : tensor<32x2x32xf32>) outs(%{{.*}} : tensor<2x32x32xf32>) permutation = [1, 0, 2]
func.func @seq_scatter_b2(%x: tensor<2x128x64xf32>, %w: tensor<64x32xf32>, %c: tensor<2x128x32xf32>) -> tensor<2x32x32xf32> {
  %p = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%x, %w : tensor<2x128x64xf32>, tensor<64x32xf32>) outs(%c : tensor<2x128x32xf32>) -> tensor<2x128x32xf32>
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 1 : tensor<2x128x32xf32> -> tensor<2x32x32xf32>
  return %r : tensor<2x32x32xf32>
}

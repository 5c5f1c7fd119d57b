// RUN: overlap-opt %s --overlap-decompose -split-input-file -verify-diagnostics | FileCheck %s

// Rank-major tiles (#overlap.plan<..., layout = "rank-major">): every tile
// is one chunk of one rank's block of rows, one contiguous GEMM and one
// overlap.shift; the rule is planner::RankMajorLayout.

shard.grid @tp(shape = 4)

// Reduce-scatter, G = 4, each 16-row block cut into chunks of 4 and 12:
// steps 1, 2, 3 (exchanged) then 0 (the own block). Step s computes the
// rows of block (r + s) mod 4 and shifts the partial by s into slot s of a
// 4 x 16 x 8 staging buffer; the result is the four slots summed in the
// order of the ranks that computed them (slot (r - q) mod 4 for q = 0..3),
// in f32 from +0.0.
// CHECK-LABEL: func.func @reduce_scatter
// CHECK-SAME: (%[[A:.*]]: tensor<64x16xf32>, %[[B:.*]]: tensor<16x8xf32>, %[[C:.*]]: tensor<64x8xf32>)
// CHECK: %[[R:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[ST:.*]] = tensor.empty() : tensor<4x16x8xf32>
// CHECK: overlap.tiles %[[ST]] : tensor<4x16x8xf32> (%[[S10:.*]] = [1, 0, 0] [1, 4, 8], %{{.*}} = [1, 4, 0] [1, 12, 8], %{{.*}} = [2, 0, 0] [1, 4, 8], %{{.*}} = [2, 4, 0] [1, 12, 8], %{{.*}} = [3, 0, 0] [1, 4, 8], %{{.*}} = [3, 4, 0] [1, 12, 8], %{{.*}} = [0, 0, 0] [1, 4, 8], %{{.*}} = [0, 4, 0] [1, 12, 8])
// CHECK: %[[S1:.*]] = arith.addi %[[R]], %c1
// CHECK: %[[B1:.*]] = arith.remui %[[S1]], %c4
// CHECK: %[[ROW:.*]] = arith.muli %[[B1]], %c16
// CHECK: %[[INTO:.*]] = tensor.collapse_shape %[[S10]]
// CHECK: %[[CROWS:.*]] = tensor.extract_slice %[[C]][%[[ROW]], 0] [4, 8] [1, 1]
// CHECK: %[[INIT:.*]] = linalg.copy ins(%[[CROWS]] : tensor<4x8xf32>)
// CHECK: %[[AROWS:.*]] = tensor.extract_slice %[[A]][%[[ROW]], 0] [4, 16] [1, 1]
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[AROWS]], %[[B]] : tensor<4x16xf32>, tensor<16x8xf32>) outs(%[[INIT]] : tensor<4x8xf32>)
// CHECK: overlap.shift %[[P]] by 1 into %[[INTO]] on @tp grid_axes = [0] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: overlap.shift %{{.*}} by 1 into
// CHECK-COUNT-2: overlap.shift %{{.*}} by 2 into
// CHECK-COUNT-2: overlap.shift %{{.*}} by 3 into
// The own block's chunks: no shift; the GEMM writes its slot in place.
// CHECK-NOT: overlap.shift
// CHECK: overlap.yield
// CHECK-COUNT-4: tensor.extract_slice %{{.*}}[%{{.*}}, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<4x16x8xf32> to tensor<16x8xf32>
// CHECK: linalg.generic
// CHECK: arith.constant 0.000000e+00 : f32
// CHECK-COUNT-4: arith.addf
// CHECK: return
func.func @reduce_scatter(%a: tensor<64x16xf32>, %b: tensor<16x8xf32>, %c: tensor<64x8xf32>) -> tensor<16x8xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [4, 12, 4, 12, 4, 12, 4, 12], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0, layout = "rank-major">}
      : tensor<64x16xf32>, tensor<16x8xf32>, tensor<64x8xf32> -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

shard.grid @tp(shape = 2)

// bf16 factors, f32 accumulator, bf16 result: each partial is rounded to
// bf16 before it is sent (as the interleaved tiles do), and the sum
// widens every part to f32 and rounds once.
// CHECK-LABEL: func.func @reduce_scatter_rounded
// CHECK: overlap.shift %{{.*}} by 1 into %{{.*}} : tensor<8x8xbf16>, tensor<8x8xbf16> -> tensor<8x8xbf16>
// CHECK: linalg.generic
// CHECK-COUNT-2: arith.extf
// CHECK: arith.truncf
func.func @reduce_scatter_rounded(%a: tensor<16x16xbf16>, %b: tensor<16x8xbf16>) -> tensor<8x8xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [8, 8], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0, layout = "rank-major">}
      : tensor<16x16xbf16>, tensor<16x8xbf16>, tensor<16x8xf32> -> tensor<8x8xbf16>
  return %r : tensor<8x8xbf16>
}

// -----

shard.grid @tp(shape = 4)

// All-gather, G = 4, blocks of 16 rows in two chunks of 8: the tiles are
// slices of C at rows (r + s) mod 4 x 16 + chunk offset, index values (one
// overlap.tiles, not a chain of inserts). Step 0 computes the local rows
// in place; step s shifts the local chunk by -s (receiving block
// (r + s) mod 4's) and computes those rows of C.
// CHECK-LABEL: func.func @all_gather
// CHECK-SAME: (%[[A:.*]]: tensor<16x16xf32>, %[[B:.*]]: tensor<16x8xf32>, %[[C:.*]]: tensor<64x8xf32>)
// CHECK: %[[OWN0:.*]] = arith.muli %[[R:.*]], %c16
// CHECK: %[[OWN8:.*]] = arith.addi %{{.*}}, %c8
// CHECK: %[[S1:.*]] = arith.addi %[[R]], %c1
// CHECK: %[[B1:.*]] = arith.remui %[[S1]], %c4
// CHECK: %[[ROW:.*]] = arith.muli %[[B1]], %c16
// CHECK: overlap.tiles %[[C]] : tensor<64x8xf32> (%[[T0:.*]] = [%[[OWN0]], 0] [8, 8], %[[T1:.*]] = [%[[OWN8]], 0] [8, 8], %[[T2:.*]] = [%[[ROW]], 0] [8, 8], %{{.*}} = [%{{.*}}, 0] [8, 8], %{{.*}} = [%{{.*}}, 0] [8, 8], %{{.*}} = [%{{.*}}, 0] [8, 8], %{{.*}} = [%{{.*}}, 0] [8, 8], %{{.*}} = [%{{.*}}, 0] [8, 8])
// CHECK: %[[L0:.*]] = tensor.extract_slice %[[A]][0, 0] [8, 16] [1, 1]
// CHECK-NEXT: linalg.matmul ins(%[[L0]], %[[B]] : {{.*}}) outs(%[[T0]] :
// CHECK-NEXT: %[[L1:.*]] = tensor.extract_slice %[[A]][8, 0] [8, 16] [1, 1]
// CHECK-NEXT: linalg.matmul ins(%[[L1]], %[[B]] : {{.*}}) outs(%[[T1]] :
// CHECK-NEXT: %[[L2:.*]] = tensor.extract_slice %[[A]][0, 0] [8, 16] [1, 1]
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<8x16xf32>
// CHECK-NEXT: %[[G:.*]] = overlap.shift %[[L2]] by -1 into %[[E]] on @tp grid_axes = [0]
// CHECK-NEXT: linalg.matmul ins(%[[G]], %[[B]] : tensor<8x16xf32>, tensor<16x8xf32>) outs(%[[T2]] : tensor<8x8xf32>)
// CHECK: overlap.shift %{{.*}} by -1 into
// CHECK-COUNT-2: overlap.shift %{{.*}} by -2 into
// CHECK-COUNT-2: overlap.shift %{{.*}} by -3 into
// CHECK-NOT: overlap.shift
// CHECK: overlap.yield
// CHECK: return
func.func @all_gather(%a: tensor<16x16xf32>, %b: tensor<16x8xf32>, %c: tensor<64x8xf32>) -> tensor<64x8xf32> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [8, 8, 8, 8, 8, 8, 8, 8], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0, layout = "rank-major">}
      : tensor<16x16xf32>, tensor<16x8xf32>, tensor<64x8xf32> -> tensor<64x8xf32>
  return %r : tensor<64x8xf32>
}

// -----

shard.grid @tp(shape = 4)
func.func @all_reduce(%a: tensor<64x16xf32>, %b: tensor<16x8xf32>, %c: tensor<64x8xf32>) -> tensor<64x8xf32> {
  // expected-error @+1 {{plan layout "rank-major" is only for reduce-scatter and all-gather matmuls}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [16, 16, 16, 16], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0, layout = "rank-major">}
      : tensor<64x16xf32>, tensor<16x8xf32>, tensor<64x8xf32> -> tensor<64x8xf32>
  return %r : tensor<64x8xf32>
}

// -----

shard.grid @tp(shape = 4)
func.func @uneven_cut(%a: tensor<64x16xf32>, %b: tensor<16x8xf32>, %c: tensor<64x8xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{rank-major plan tile #2 has 12 rows where the first block's chunk #0 has 4; every rank's block is cut the same way}}
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [4, 12, 12, 4, 4, 12, 4, 12], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0, layout = "rank-major">}
      : tensor<64x16xf32>, tensor<16x8xf32>, tensor<64x8xf32> -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

shard.grid @tp(shape = 4)
func.func @tile_count(%a: tensor<64x16xf32>, %b: tensor<16x8xf32>, %c: tensor<64x8xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{rank-major plan has 2 tiles, expected the chunks of each of the 4 ranks' blocks (a multiple of 4, group >= 2)}}
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [32, 32], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0, layout = "rank-major">}
      : tensor<64x16xf32>, tensor<16x8xf32>, tensor<64x8xf32> -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

func.func @bad_layout() attributes {
  // expected-error @+1 {{#overlap.plan layout must be "interleaved" or "rank-major", got "blocked"}}
  p = #overlap.plan<tiles = [4], strategy = "given", bound = comm, predicted_us = 1.0, serial_us = 2.0, layout = "blocked">} {
  return
}

// -----

shard.grid @tp(shape = 4)

// Exchange groups: groups = [1, 3] makes step 1 one exchange and steps 2,
// 3 and 0 another; the shifts of a group but its last exchanged one carry
// `with_next` (the own block's step 0 has none to fuse).
// CHECK-LABEL: func.func @grouped_reduce_scatter
// CHECK: overlap.shift %{{.*}} by 1 into %{{.*}} on @tp grid_axes = [0] :
// CHECK: overlap.shift %{{.*}} by 2 into %{{.*}} on @tp grid_axes = [0] {with_next} :
// CHECK: overlap.shift %{{.*}} by 3 into %{{.*}} on @tp grid_axes = [0] :
// CHECK-NOT: overlap.shift
func.func @grouped_reduce_scatter(%a: tensor<64x16xf32>, %b: tensor<16x8xf32>, %c: tensor<64x8xf32>) -> tensor<16x8xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [16, 16, 16, 16], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0, layout = "rank-major", groups = [1, 3]>}
      : tensor<64x16xf32>, tensor<16x8xf32>, tensor<64x8xf32> -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// -----

shard.grid @tp(shape = 4)

// All-gather, groups = [2, 2]: the own block and step 1 (one exchange),
// then steps 2 and 3 fused.
// CHECK-LABEL: func.func @grouped_all_gather
// CHECK: overlap.shift %{{.*}} by -1 into %{{.*}} on @tp grid_axes = [0] :
// CHECK: overlap.shift %{{.*}} by -2 into %{{.*}} on @tp grid_axes = [0] {with_next} :
// CHECK: overlap.shift %{{.*}} by -3 into %{{.*}} on @tp grid_axes = [0] :
func.func @grouped_all_gather(%a: tensor<16x16xf32>, %b: tensor<16x8xf32>, %c: tensor<64x8xf32>) -> tensor<64x8xf32> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [16, 16, 16, 16], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0, layout = "rank-major", groups = [2, 2]>}
      : tensor<16x16xf32>, tensor<16x8xf32>, tensor<64x8xf32> -> tensor<64x8xf32>
  return %r : tensor<64x8xf32>
}

// -----

func.func @groups_interleaved() attributes {
  // expected-error @+1 {{#overlap.plan groups are only for layout "rank-major"}}
  p = #overlap.plan<tiles = [4, 4], strategy = "given", bound = comm, predicted_us = 1.0, serial_us = 2.0, groups = [2]>} {
  return
}

// -----

func.func @groups_sum() attributes {
  // expected-error @+1 {{#overlap.plan groups sum to 3 tiles, but the plan has 4}}
  p = #overlap.plan<tiles = [4, 4, 4, 4], strategy = "given", bound = comm, predicted_us = 1.0, serial_us = 2.0, layout = "rank-major", groups = [1, 2]>} {
  return
}

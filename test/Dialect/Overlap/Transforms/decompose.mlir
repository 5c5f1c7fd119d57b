// RUN: overlap-opt %s --overlap-decompose --remarks-filter=overlap -split-input-file -verify-diagnostics | FileCheck %s

shard.grid @tp(shape = 4)

// All-reduce: one overlap.tiles over C with a slice per tile; in its body,
// each tile's rows of A, one matmul into the tile's slice of C and one
// all_reduce, and the reduced tiles are yielded. No chain of inserts.
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[A:.*]]: tensor<384x64xf32>, %[[B:.*]]: tensor<64x32xf32>, %[[C:.*]]: tensor<384x32xf32>)
// CHECK-NOT: overlap.matmul_all_reduce
// CHECK: %[[R:.*]] = overlap.tiles %[[C]] : tensor<384x32xf32> (%[[T0:.*]] = [0, 0] [128, 32], %[[T1:.*]] = [128, 0] [256, 32]) {
// CHECK-NEXT: %[[A0:.*]] = tensor.extract_slice %[[A]][0, 0] [128, 64] [1, 1]
// CHECK-NEXT: %[[P0:.*]] = linalg.matmul ins(%[[A0]], %[[B]] : tensor<128x64xf32>, tensor<64x32xf32>) outs(%[[T0]] : tensor<128x32xf32>)
// CHECK-NEXT: %[[R0:.*]] = overlap.all_reduce %[[P0]] on @tp grid_axes = [0] : tensor<128x32xf32> -> tensor<128x32xf32>
// CHECK-NEXT: %[[A1:.*]] = tensor.extract_slice %[[A]][128, 0] [256, 64] [1, 1]
// CHECK-NEXT: %[[P1:.*]] = linalg.matmul ins(%[[A1]], %[[B]] : tensor<256x64xf32>, tensor<64x32xf32>) outs(%[[T1]] : tensor<256x32xf32>)
// CHECK-NEXT: %[[R1:.*]] = overlap.all_reduce %[[P1]]
// CHECK-NEXT: overlap.yield %[[R0]], %[[R1]] : tensor<128x32xf32>, tensor<256x32xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: tensor.insert_slice
func.func @all_reduce(%a: tensor<384x64xf32>, %b: tensor<64x32xf32>,
                      %c: tensor<384x32xf32>) -> tensor<384x32xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128, 256], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<384x64xf32>, tensor<64x32xf32>, tensor<384x32xf32> -> tensor<384x32xf32>
  return %r : tensor<384x32xf32>
}

// -----

shard.grid @tp(shape = 4)

// Reduce-scatter: tile i takes tiles[i]/4 rows of each rank's block (blocks
// of 96 rows), computes them with a strided-batched matmul into a packed
// 4 x q x N buffer and scatters it with one call straight into its slice of
// the result (the overlap.tiles over an empty 96 x N tensor). C is not a
// fill here, so the packed buffer starts as a copy of C's rows.
// CHECK-LABEL: func.func @reduce_scatter
// CHECK-SAME: (%[[A:.*]]: tensor<384x64xf16>, %[[B:.*]]: tensor<64x32xf16>, %[[C:.*]]: tensor<384x32xf32>)
// CHECK: %[[A3:.*]] = tensor.expand_shape %[[A]] {{\[}}[0, 1], [2]] output_shape [4, 96, 64]
// CHECK-NEXT: %[[OUT:.*]] = tensor.empty() : tensor<96x32xf32>
// CHECK-NEXT: %[[R:.*]] = overlap.tiles %[[OUT]] : tensor<96x32xf32> (%[[S0:.*]] = [0, 0] [32, 32], %[[S1:.*]] = [32, 0] [64, 32]) {
// CHECK-NEXT: %[[AT:.*]] = tensor.extract_slice %[[A3]][0, 0, 0] [4, 32, 64] [1, 1, 1]
// CHECK-NEXT: %[[PK:.*]] = tensor.empty() : tensor<4x32x32xf32>
// CHECK-NEXT: %[[C3:.*]] = tensor.expand_shape %[[C]] {{\[}}[0, 1], [2]] output_shape [4, 96, 32]
// CHECK-NEXT: %[[CT:.*]] = tensor.extract_slice %[[C3]][0, 0, 0] [4, 32, 32] [1, 1, 1]
// CHECK-NEXT: %[[INIT:.*]] = linalg.copy ins(%[[CT]] : tensor<4x32x32xf32>) outs(%[[PK]] : tensor<4x32x32xf32>)
// CHECK-NEXT: %[[P:.*]] = linalg.batch_matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[AT]], %[[B]] : tensor<4x32x64xf16>, tensor<64x32xf16>) outs(%[[INIT]] : tensor<4x32x32xf32>)
// CHECK-NEXT: %[[FLAT:.*]] = tensor.collapse_shape %[[P]] {{\[}}[0, 1], [2]] : tensor<4x32x32xf32> into tensor<128x32xf32>
// CHECK-NEXT: %[[X0:.*]] = overlap.reduce_scatter %[[FLAT]] into %[[S0]] on @tp grid_axes = [0] : tensor<128x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
// CHECK-NEXT: tensor.extract_slice %[[A3]][0, 32, 0] [4, 64, 64] [1, 1, 1]
// CHECK: %[[X1:.*]] = overlap.reduce_scatter %{{.*}} into %[[S1]] on @tp grid_axes = [0] : tensor<256x32xf32>, tensor<64x32xf32> -> tensor<64x32xf32>
// CHECK-NEXT: overlap.yield %[[X0]], %[[X1]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]] : tensor<96x32xf32>
func.func @reduce_scatter(%a: tensor<384x64xf16>, %b: tensor<64x32xf16>,
                          %c: tensor<384x32xf32>) -> tensor<96x32xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128, 256], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<384x64xf16>, tensor<64x32xf16>, tensor<384x32xf32> -> tensor<96x32xf32>
  return %r : tensor<96x32xf32>
}

// -----

shard.grid @tp(shape = 2)

// A C that is a fill needs no copy: the packed buffer is filled directly,
// and the original fill of C is gone.
// CHECK-LABEL: func.func @reduce_scatter_fill
// CHECK: %[[ZERO:.*]] = arith.constant 0.0
// CHECK-NOT: tensor.empty() : tensor<128x16xf32>
// CHECK-NOT: linalg.copy
// CHECK: %[[PK:.*]] = tensor.empty() : tensor<2x64x16xf32>
// CHECK-NEXT: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[PK]] : tensor<2x64x16xf32>)
// CHECK-NEXT: linalg.batch_matmul {{.*}} outs(%[[INIT]] : tensor<2x64x16xf32>)
// CHECK-NOT: linalg.copy
func.func @reduce_scatter_fill(%a: tensor<128x8xf32>, %b: tensor<8x16xf32>) -> tensor<64x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x16xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<128x16xf32>) -> tensor<128x16xf32>
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128], strategy = "none",
                                    bound = compute, predicted_us = 1.0, serial_us = 1.0>}
      : tensor<128x8xf32>, tensor<8x16xf32>, tensor<128x16xf32> -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

// -----

shard.grid @tp(shape = 4)

// All-gather: tile i gathers tiles[i]/4 local rows from every rank into a
// packed buffer, and a strided-batched matmul writes rank r's rows in place
// in its slice of C's view (4 blocks of 64 rows).
// CHECK-LABEL: func.func @all_gather
// CHECK-SAME: (%[[A:.*]]: tensor<64x16xbf16>, %[[B:.*]]: tensor<16x32xbf16>, %[[C:.*]]: tensor<256x32xbf16>)
// CHECK: %[[C3:.*]] = tensor.expand_shape %[[C]] {{\[}}[0, 1], [2]] output_shape [4, 64, 32]
// CHECK-NEXT: %[[ACC:.*]] = overlap.tiles %[[C3]] : tensor<4x64x32xbf16> (%[[T0:.*]] = [0, 0, 0] [4, 16, 32], %[[T1:.*]] = [0, 16, 0] [4, 48, 32]) {
// CHECK-NEXT: %[[L0:.*]] = tensor.extract_slice %[[A]][0, 0] [16, 16] [1, 1]
// CHECK-NEXT: %[[G0:.*]] = overlap.all_gather %[[L0]] on @tp grid_axes = [0] : tensor<16x16xbf16> -> tensor<64x16xbf16>
// CHECK-NEXT: %[[G03:.*]] = tensor.expand_shape %[[G0]] {{\[}}[0, 1], [2]] output_shape [4, 16, 16]
// CHECK-NEXT: %[[P0:.*]] = linalg.batch_matmul {{.*}} ins(%[[G03]], %[[B]] : tensor<4x16x16xbf16>, tensor<16x32xbf16>) outs(%[[T0]] : tensor<4x16x32xbf16>)
// CHECK-NEXT: tensor.extract_slice %[[A]][16, 0] [48, 16] [1, 1]
// CHECK-NEXT: overlap.all_gather %{{.*}} : tensor<48x16xbf16> -> tensor<192x16xbf16>
// CHECK: %[[P1:.*]] = linalg.batch_matmul {{.*}} outs(%[[T1]] : tensor<4x48x32xbf16>)
// CHECK-NEXT: overlap.yield %[[P0]], %[[P1]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[R:.*]] = tensor.collapse_shape %[[ACC]] {{\[}}[0, 1], [2]] : tensor<4x64x32xbf16> into tensor<256x32xbf16>
// CHECK-NEXT: return %[[R]]
func.func @all_gather(%a: tensor<64x16xbf16>, %b: tensor<16x32xbf16>,
                      %c: tensor<256x32xbf16>) -> tensor<256x32xbf16> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [64, 192], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<64x16xbf16>, tensor<16x32xbf16>, tensor<256x32xbf16> -> tensor<256x32xbf16>
  return %r : tensor<256x32xbf16>
}

// -----

shard.grid @tp(shape = 4)

// Without a plan the op stays, and a remark says why.
// CHECK-LABEL: func.func @no_plan
// CHECK: overlap.matmul_all_reduce
func.func @no_plan(%a: tensor<128x64xf32>, %b: tensor<64x32xf32>,
                   %c: tensor<128x32xf32>) -> tensor<128x32xf32> {
  // expected-remark @+1 {{not decomposed: no 'overlap.plan' attribute (run overlap-plan first)}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<128x64xf32>, tensor<64x32xf32>, tensor<128x32xf32> -> tensor<128x32xf32>
  return %r : tensor<128x32xf32>
}

// -----

shard.grid @dyn(shape = ?)

// CHECK-LABEL: func.func @dynamic_group
// CHECK: overlap.matmul_reduce_scatter
func.func @dynamic_group(%a: tensor<128x64xf32>, %b: tensor<64x32xf32>,
                         %c: tensor<128x32xf32>) -> tensor<32x32xf32> {
  // expected-remark @+1 {{not decomposed: the group size of @dyn is not static}}
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @dyn grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128], strategy = "none",
                                    bound = comm, predicted_us = 1.0, serial_us = 1.0>}
      : tensor<128x64xf32>, tensor<64x32xf32>, tensor<128x32xf32> -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}

// -----

shard.grid @tp(shape = 4)

// A plan on an op whose M is dynamic cannot be laid out.
// CHECK-LABEL: func.func @dynamic_m
// CHECK: overlap.matmul_all_reduce
func.func @dynamic_m(%a: tensor<?x64xf32>, %b: tensor<64x32xf32>,
                     %c: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-remark @+1 {{not decomposed: A is 'tensor<?x64xf32>'; tiles need static shapes}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128, 128], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<?x64xf32>, tensor<64x32xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}

// -----

shard.grid @tp(shape = 4)

// Every shape must be static, not only M: a dynamic accumulator would give
// the tiles' views of C a negative extent.
// CHECK-LABEL: func.func @dynamic_c
// CHECK: overlap.matmul_reduce_scatter
// CHECK-NOT: overlap.tiles
func.func @dynamic_c(%a: tensor<512x64xf32>, %b: tensor<64x32xf32>,
                     %c: tensor<?x32xf32>) -> tensor<128x32xf32> {
  // expected-remark @+1 {{not decomposed: C is 'tensor<?x32xf32>'; tiles need static shapes}}
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128, 128, 128, 128], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<512x64xf32>, tensor<64x32xf32>, tensor<?x32xf32> -> tensor<128x32xf32>
  return %r : tensor<128x32xf32>
}

// -----

shard.grid @tp(shape = 4)

// CHECK-LABEL: func.func @dynamic_n
// CHECK: overlap.all_gather_matmul
func.func @dynamic_n(%a: tensor<64x16xf32>, %b: tensor<16x?xf32>,
                     %c: tensor<256x?xf32>) -> tensor<256x?xf32> {
  // expected-remark @+1 {{not decomposed: B is 'tensor<16x?xf32>'; tiles need static shapes}}
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128, 128], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<64x16xf32>, tensor<16x?xf32>, tensor<256x?xf32> -> tensor<256x?xf32>
  return %r : tensor<256x?xf32>
}

// -----

// A rounded result (f32 C, bf16 result): each tile's f32 rows of C + A*B
// are rounded into its slice of a bf16 result, and the all-reduce or
// reduce-scatter runs in bf16.
shard.grid @tp(shape = 4)
// CHECK-LABEL: func.func @rounded_all_reduce
// CHECK: %[[E:.*]] = tensor.empty() : tensor<256x32xbf16>
// CHECK: overlap.tiles %[[E]] : tensor<256x32xbf16> (%[[S0:.*]] = [0, 0] [128, 32], %[[S1:.*]] = [128, 0] [128, 32])
// CHECK: %[[C0:.*]] = tensor.extract_slice %arg2[0, 0] [128, 32] [1, 1]
// CHECK: %[[P0:.*]] = linalg.matmul ins(%{{.*}}, %arg1 : tensor<128x64xbf16>, tensor<64x32xbf16>) outs(%[[C0]] : tensor<128x32xf32>)
// CHECK: %[[R0:.*]] = linalg.generic {{.*}} ins(%[[P0]] : tensor<128x32xf32>) outs(%[[S0]] : tensor<128x32xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: overlap.all_reduce %[[R0]] on @tp grid_axes = [0] : tensor<128x32xbf16> -> tensor<128x32xbf16>
func.func @rounded_all_reduce(%a: tensor<256x64xbf16>, %b: tensor<64x32xbf16>, %c: tensor<256x32xf32>) -> tensor<256x32xbf16> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] {overlap.plan = #overlap.plan<tiles = [128, 128], strategy = "uniform:2", bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<256x64xbf16>, tensor<64x32xbf16>, tensor<256x32xf32> -> tensor<256x32xbf16>
  return %r : tensor<256x32xbf16>
}

// CHECK-LABEL: func.func @rounded_reduce_scatter
// CHECK: overlap.tiles %{{.*}} : tensor<64x32xbf16>
// CHECK: %[[P:.*]] = tensor.collapse_shape %{{.*}} : tensor<4x32x32xf32> into tensor<128x32xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[P]] : tensor<128x32xf32>) outs(%{{.*}} : tensor<128x32xbf16>)
// CHECK: overlap.reduce_scatter %[[R]] into %{{.*}} on @tp grid_axes = [0] : tensor<128x32xbf16>, tensor<32x32xbf16> -> tensor<32x32xbf16>
func.func @rounded_reduce_scatter(%a: tensor<256x64xbf16>, %b: tensor<64x32xbf16>, %c: tensor<256x32xf32>) -> tensor<64x32xbf16> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0] {overlap.plan = #overlap.plan<tiles = [128, 128], strategy = "uniform:2", bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<256x64xbf16>, tensor<64x32xbf16>, tensor<256x32xf32> -> tensor<64x32xbf16>
  return %r : tensor<64x32xbf16>
}

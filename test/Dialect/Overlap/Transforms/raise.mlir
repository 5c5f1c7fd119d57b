// RUN: overlap-opt %s --overlap-raise --remarks-filter-missed=overlap -split-input-file -verify-diagnostics | FileCheck %s

shard.grid @tp(shape = 4)

// What upstream sharding-propagation + shard-partition + canonicalize emit
// for a row-parallel matmul: the accumulator comes out of an scf.if that
// keeps the init on rank 0 and zeros it elsewhere. When the init is itself
// zeros, both branches are the same fill and the if goes (every layer's
// accumulator would otherwise have a dynamic layout and an ownership known
// only at run time after bufferization).
// CHECK-LABEL: func.func @upstream_row_parallel
// CHECK-NOT: scf.if
// CHECK: %[[C:.*]] = linalg.fill
// CHECK-NOT: scf.if
// CHECK-NOT: linalg.matmul ins(%arg0
// CHECK: %[[R:.*]] = overlap.matmul_all_reduce %arg0, %arg1, %[[C]] on @tp grid_axes = [0] : tensor<512x64xf32>, tensor<64x64xf32>, tensor<512x64xf32> -> tensor<512x64xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: return %[[R]]
func.func @upstream_row_parallel(%arg0: tensor<512x64xf32>, %arg1: tensor<64x64xf32>) -> tensor<512x64xf32> {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  %3 = tensor.empty() : tensor<512x64xf32>
  %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<512x64xf32>) -> tensor<512x64xf32>
  %idx = shard.process_multi_index on @tp axes = [0] : index
  %5 = arith.cmpi eq, %idx, %c0 : index
  %6 = scf.if %5 -> (tensor<512x64xf32>) {
    scf.yield %4 : tensor<512x64xf32>
  } else {
    %8 = tensor.empty() : tensor<512x64xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<512x64xf32>) -> tensor<512x64xf32>
    scf.yield %9 : tensor<512x64xf32>
  }
  %7 = linalg.matmul ins(%arg0, %arg1 : tensor<512x64xf32>, tensor<64x64xf32>) outs(%6 : tensor<512x64xf32>) -> tensor<512x64xf32>
  %all_reduce = shard.all_reduce %7 on @tp grid_axes = [0] : tensor<512x64xf32> -> tensor<512x64xf32>
  return %all_reduce : tensor<512x64xf32>
}

// -----

shard.grid @tp(shape = 4)

// An init other than zeros (a bias on rank 0): the if stays, and the fused
// op keeps each rank's own C.
// CHECK-LABEL: func.func @upstream_row_parallel_bias
// CHECK: %[[C:.*]] = scf.if
// CHECK: overlap.matmul_all_reduce %arg0, %arg1, %[[C]] on @tp
func.func @upstream_row_parallel_bias(%arg0: tensor<512x64xf32>, %arg1: tensor<64x64xf32>, %bias: tensor<512x64xf32>) -> tensor<512x64xf32> {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  %idx = shard.process_multi_index on @tp axes = [0] : index
  %5 = arith.cmpi eq, %idx, %c0 : index
  %6 = scf.if %5 -> (tensor<512x64xf32>) {
    scf.yield %bias : tensor<512x64xf32>
  } else {
    %8 = tensor.empty() : tensor<512x64xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<512x64xf32>) -> tensor<512x64xf32>
    scf.yield %9 : tensor<512x64xf32>
  }
  %7 = linalg.matmul ins(%arg0, %arg1 : tensor<512x64xf32>, tensor<64x64xf32>) outs(%6 : tensor<512x64xf32>) -> tensor<512x64xf32>
  %all_reduce = shard.all_reduce %7 on @tp grid_axes = [0] : tensor<512x64xf32> -> tensor<512x64xf32>
  return %all_reduce : tensor<512x64xf32>
}

// -----

shard.grid @tp(shape = 4)

// A tensor.cast between the matmul and the collective, and a constant
// accumulator, are harmless; the result is cast back to the type the users
// saw.
// CHECK-LABEL: func.func @cast_between
// CHECK: %[[C:.*]] = arith.constant dense<{{.*}}> : tensor<256x16xf32>
// CHECK: %[[R:.*]] = overlap.matmul_reduce_scatter %arg0, %arg1, %[[C]] on @tp grid_axes = [0] : tensor<256x8xbf16>, tensor<8x16xbf16>, tensor<256x16xf32> -> tensor<64x16xf32>
// CHECK-NEXT: %[[CAST:.*]] = tensor.cast %[[R]] : tensor<64x16xf32> to tensor<?x16xf32>
// CHECK-NOT: tensor.cast %
// CHECK-NOT: shard.reduce_scatter
// CHECK: return %[[CAST]]
func.func @cast_between(%a: tensor<256x8xbf16>, %b: tensor<8x16xbf16>) -> tensor<?x16xf32> {
  %c = arith.constant dense<1.0> : tensor<256x16xf32>
  %p = linalg.matmul ins(%a, %b : tensor<256x8xbf16>, tensor<8x16xbf16>) outs(%c : tensor<256x16xf32>) -> tensor<256x16xf32>
  %d = tensor.cast %p : tensor<256x16xf32> to tensor<?x16xf32>
  %s = shard.reduce_scatter %d on @tp grid_axes = [0] scatter_axis = 0 : tensor<?x16xf32> -> tensor<?x16xf32>
  return %s : tensor<?x16xf32>
}

// -----

shard.grid @tp(shape = 4)

// All-gather of the left operand along rows, with a fill accumulator.
// CHECK-LABEL: func.func @all_gather_lhs
// CHECK: %[[C:.*]] = linalg.fill
// CHECK-NEXT: %[[R:.*]] = overlap.all_gather_matmul %arg0, %arg1, %[[C]] on @tp grid_axes = [0] : tensor<32x8xf16>, tensor<8x16xf16>, tensor<128x16xf16> -> tensor<128x16xf16>
// CHECK-NOT: shard.all_gather
// CHECK-NOT: linalg.matmul
func.func @all_gather_lhs(%a: tensor<32x8xf16>, %b: tensor<8x16xf16>) -> tensor<128x16xf16> {
  %g = shard.all_gather %a on @tp grid_axes = [0] gather_axis = 0 : tensor<32x8xf16> -> tensor<128x8xf16>
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<128x16xf16>
  %c = linalg.fill ins(%zero : f16) outs(%e : tensor<128x16xf16>) -> tensor<128x16xf16>
  %p = linalg.matmul ins(%g, %b : tensor<128x8xf16>, tensor<8x16xf16>) outs(%c : tensor<128x16xf16>) -> tensor<128x16xf16>
  return %p : tensor<128x16xf16>
}

// -----

// Refusals: each leaves the IR alone and says why.

shard.grid @tp(shape = 4)

// CHECK-LABEL: func.func @other_users
// CHECK: linalg.matmul
// CHECK: shard.all_reduce
func.func @other_users(%a: tensor<64x8xf32>, %b: tensor<8x16xf32>, %c: tensor<64x16xf32>) -> (tensor<64x16xf32>, tensor<64x16xf32>) {
  %p = linalg.matmul ins(%a, %b : tensor<64x8xf32>, tensor<8x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  // expected-remark @+1 {{not raised to a fused overlap op: the unreduced matmul result has other users, which would need it before the all-reduce}}
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<64x16xf32> -> tensor<64x16xf32>
  return %r, %p : tensor<64x16xf32>, tensor<64x16xf32>
}

// CHECK-LABEL: func.func @max_reduction
// CHECK: shard.all_reduce
func.func @max_reduction(%a: tensor<64x8xf32>, %b: tensor<8x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %p = linalg.matmul ins(%a, %b : tensor<64x8xf32>, tensor<8x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  // expected-remark @+1 {{not raised to a fused overlap op: the reduction is 'max'; only a sum distributes over the tiles of C + A*B}}
  %r = shard.all_reduce %p on @tp grid_axes = [0] reduction = max : tensor<64x16xf32> -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

// Both operands transposed: no normalization takes it (a transposed A
// alone is a weight gradient, raised in raise-token-contractions.mlir).
// CHECK-LABEL: func.func @transposed
// CHECK: shard.all_reduce
func.func @transposed(%a: tensor<8x64xf32>, %b: tensor<16x8xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<8x64xf32>, tensor<16x8xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  // expected-remark @+1 {{not raised to a fused overlap op: the matmul has user-defined (transposed or broadcast) indexing maps, which the fused ops do not express}}
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<64x16xf32> -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

// CHECK-LABEL: func.func @dynamic
// CHECK: shard.all_reduce
func.func @dynamic(%a: tensor<?x8xf32>, %b: tensor<8x16xf32>, %c: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %p = linalg.matmul ins(%a, %b : tensor<?x8xf32>, tensor<8x16xf32>) outs(%c : tensor<?x16xf32>) -> tensor<?x16xf32>
  // expected-remark @+1 {{not raised to a fused overlap op: a shape is dynamic; planning needs static M, N and K}}
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<?x16xf32> -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}

// CHECK-LABEL: func.func @column_scatter
// CHECK: shard.reduce_scatter
func.func @column_scatter(%a: tensor<64x8xf32>, %b: tensor<8x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x4xf32> {
  %p = linalg.matmul ins(%a, %b : tensor<64x8xf32>, tensor<8x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  // expected-remark @+1 {{not raised to a fused overlap op: the reduce-scatter splits axis 1; only rows (axis 0) keep every tile one contiguous collective}}
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 1 : tensor<64x16xf32> -> tensor<64x4xf32>
  return %r : tensor<64x4xf32>
}

// CHECK-LABEL: func.func @widening_collective
// CHECK: shard.all_reduce
func.func @widening_collective(%a: tensor<64x8xf16>, %b: tensor<8x16xf16>, %c: tensor<64x16xf16>) -> tensor<64x16xf32> {
  %p = linalg.matmul ins(%a, %b : tensor<64x8xf16>, tensor<8x16xf16>) outs(%c : tensor<64x16xf16>) -> tensor<64x16xf16>
  // expected-remark @+1 {{not raised to a fused overlap op: the collective changes the element type}}
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<64x16xf16> -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

// CHECK-LABEL: func.func @integer
// CHECK: shard.all_reduce
func.func @integer(%a: tensor<64x8xi32>, %b: tensor<8x16xi32>, %c: tensor<64x16xi32>) -> tensor<64x16xi32> {
  %p = linalg.matmul ins(%a, %b : tensor<64x8xi32>, tensor<8x16xi32>) outs(%c : tensor<64x16xi32>) -> tensor<64x16xi32>
  // expected-remark @+1 {{not raised to a fused overlap op: its element types are not supported (A and B: one of f16, bf16, f32; C: the same or f32)}}
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<64x16xi32> -> tensor<64x16xi32>
  return %r : tensor<64x16xi32>
}

// The gathered rows are also returned: the matmul is fused all the same,
// the return keeps a plain gather of them (after the fused op), as
// raise-shared-gather.mlir checks with its remarks.
// CHECK-LABEL: func.func @gather_other_users
// CHECK: %[[P:.*]] = overlap.all_gather_matmul %arg0, %arg1, %arg2
// CHECK: %[[G:.*]] = shard.all_gather %arg0
// CHECK: return %[[P]], %[[G]]
func.func @gather_other_users(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %c: tensor<64x16xf32>) -> (tensor<64x16xf32>, tensor<64x8xf32>) {
  %g = shard.all_gather %a on @tp grid_axes = [0] gather_axis = 0 : tensor<16x8xf32> -> tensor<64x8xf32>
  %p = linalg.matmul ins(%g, %b : tensor<64x8xf32>, tensor<8x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %p, %g : tensor<64x16xf32>, tensor<64x8xf32>
}

// CHECK-LABEL: func.func @gather_columns
// CHECK: shard.all_gather
func.func @gather_columns(%a: tensor<64x2xf32>, %b: tensor<8x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %g = shard.all_gather %a on @tp grid_axes = [0] gather_axis = 1 : tensor<64x2xf32> -> tensor<64x8xf32>
  // expected-remark @+1 {{not raised to a fused overlap op: the all-gather concatenates axis 1; only rows (axis 0) are handled}}
  %p = linalg.matmul ins(%g, %b : tensor<64x8xf32>, tensor<8x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %p : tensor<64x16xf32>
}

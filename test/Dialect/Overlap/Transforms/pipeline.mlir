// RUN: overlap-opt %s --overlap-pipeline="profile=h100-nvlink-datasheet strategy=uniform:2" -split-input-file | FileCheck %s
// RUN: overlap-opt %s --overlap-pipeline="strategy=auto" --remarks-filter-analyse=overlap -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=AUTO
// The forwarded options are checked by the passes that take them, and the
// error names the option.
// RUN: not overlap-opt %s --overlap-pipeline="fast-memory=nan" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=FASTMEM
// FASTMEM: error: overlap-reorder-chains: option fast-memory is nan; expected a finite number of elements >= 1
// RUN: not overlap-opt %s --overlap-pipeline="ranks=-1" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=RANKS
// RANKS: error: overlap-plan: option ranks is -1; expected 0 (each op's group size from its grid) or a group size >= 1

// The upstream-partitioned Megatron MLP (sharding-propagation,
// shard-partition, canonicalize on a column- then row-parallel pair of
// weights over 4 ranks): the row-parallel matmul + all_reduce is raised,
// planned and split into two tiles.
// AUTO: remark: {{.*}}Remark="tiles [{{.*}}] ({{[a-z0-9:]+}}, {{comm|compute}}-bound)
// CHECK-LABEL: func.func @mlp
// Both zero accumulators are gone (overlap-fold-into-gemms): each GEMM
// overwrites, the tiles' destination is an empty tensor.
// CHECK-NOT: linalg.fill
// CHECK: %[[H:.*]] = overlap.gemm %arg0, %arg1 into
// CHECK-NOT: scf.if
// CHECK-NOT: linalg.fill
// CHECK: %[[C:.*]] = tensor.empty
// CHECK: overlap.tiles %[[C]] : tensor<512x64xf32> (%[[C0:.*]] = [0, 0] [256, 64], %{{.*}} = [256, 0] [256, 64])
// CHECK: %[[A0:.*]] = tensor.extract_slice %[[H]][0, 0] [256, 64] [1, 1]
// CHECK: %[[P0:.*]] = overlap.gemm %[[A0]], %arg2 into %[[C0]] :
// CHECK: overlap.all_reduce %[[P0]] on @tp grid_axes = [0]
// CHECK: %[[A1:.*]] = tensor.extract_slice %[[H]][256, 0] [256, 64] [1, 1]
// CHECK: overlap.all_reduce
// CHECK-NOT: shard.all_reduce
// CHECK-NOT: overlap.matmul_all_reduce
shard.grid @tp(shape = 4)
func.func @mlp(%arg0: tensor<512x64xf32>, %arg1: tensor<64x64xf32>, %arg2: tensor<64x64xf32>) -> tensor<512x64xf32> {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<512x64xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<512x64xf32>) -> tensor<512x64xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<512x64xf32>, tensor<64x64xf32>) outs(%1 : tensor<512x64xf32>) -> tensor<512x64xf32>
  %3 = tensor.empty() : tensor<512x64xf32>
  %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<512x64xf32>) -> tensor<512x64xf32>
  %proc_linear_idx = shard.process_multi_index on @tp axes = [0] : index
  %5 = arith.cmpi eq, %proc_linear_idx, %c0 : index
  %6 = scf.if %5 -> (tensor<512x64xf32>) {
    scf.yield %4 : tensor<512x64xf32>
  } else {
    %8 = tensor.empty() : tensor<512x64xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%8 : tensor<512x64xf32>) -> tensor<512x64xf32>
    scf.yield %9 : tensor<512x64xf32>
  }
  %7 = linalg.matmul ins(%2, %arg2 : tensor<512x64xf32>, tensor<64x64xf32>) outs(%6 : tensor<512x64xf32>) -> tensor<512x64xf32>
  %all_reduce = shard.all_reduce %7 on @tp grid_axes = [0] : tensor<512x64xf32> -> tensor<512x64xf32>
  return %all_reduce : tensor<512x64xf32>
}

// -----

// Sequence-parallel input gathered along rows, then a column-parallel
// matmul: raised to all_gather_matmul, planned, and decomposed into
// per-tile gathers feeding strided-batched matmuls.
// AUTO: remark: {{.*}}Remark="tiles [{{.*}}] ({{[a-z0-9:]+}}, {{comm|compute}}-bound)
// CHECK-LABEL: func.func @all_gather
// CHECK-NOT: shard.all_gather
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [4, 128, 256]
// CHECK: overlap.all_gather %{{.*}} on @tp grid_axes = [0] : tensor<64x512xf16> -> tensor<256x512xf16>
// CHECK: overlap.gemm {{.*}} : tensor<4x64x512xf16>, tensor<512x256xf16>, tensor<4x64x256xf16>
// CHECK: overlap.all_gather %{{.*}} on @tp grid_axes = [0] : tensor<64x512xf16> -> tensor<256x512xf16>
// CHECK: overlap.gemm {{.*}} : tensor<4x64x512xf16>, tensor<512x256xf16>, tensor<4x64x256xf16>
// CHECK: tensor.collapse_shape {{.*}} into tensor<512x256xf16>
shard.grid @tp(shape = 4)
func.func @all_gather(%x: tensor<128x512xf16>, %w: tensor<512x256xf16>) -> tensor<512x256xf16> {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<128x512xf16> -> tensor<512x512xf16>
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<512x256xf16>
  %c = linalg.fill ins(%zero : f16) outs(%e : tensor<512x256xf16>) -> tensor<512x256xf16>
  %y = linalg.matmul ins(%g, %w : tensor<512x512xf16>, tensor<512x256xf16>) outs(%c : tensor<512x256xf16>) -> tensor<512x256xf16>
  return %y : tensor<512x256xf16>
}

// RUN: overlap-opt %s | overlap-opt | FileCheck %s
// RUN: overlap-opt %s --mlir-print-op-generic | overlap-opt | FileCheck %s

// Expert parallelism's fused ops and the tile-level all-to-all, in both
// forms (one expert per rank: rank 2; E experts per rank: rank 3).

shard.grid @ep(shape = 4)

// CHECK-LABEL: func.func @one_expert
func.func @one_expert(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>,
                      %c: tensor<64x48xf32>, %w2: tensor<48x32xf32>,
                      %c2: tensor<64x32xf32>) -> tensor<64x32xf32> {
  // CHECK: overlap.all_to_all_matmul %{{.*}}, %{{.*}}, %{{.*}} on @ep grid_axes = [0]
  // CHECK-SAME: {overlap.plan = #overlap.plan<tiles = [32, 32], strategy = "uniform:2", bound = comm, predicted_us = 10.0, serial_us = 12.0>}
  // CHECK-SAME: : tensor<64x32xf32>, tensor<32x48xf32>, tensor<64x48xf32> -> tensor<64x48xf32>
  %h = overlap.all_to_all_matmul %x, %w, %c on @ep grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [32, 32], strategy = "uniform:2",
                                    bound = comm, predicted_us = 10.0,
                                    serial_us = 12.0>}
      : tensor<64x32xf32>, tensor<32x48xf32>, tensor<64x48xf32>
      -> tensor<64x48xf32>
  // CHECK: overlap.matmul_all_to_all %{{.*}} on @ep grid_axes = [0]
  // CHECK-SAME: : tensor<64x48xf32>, tensor<48x32xf32>, tensor<64x32xf32> -> tensor<64x32xf32>
  %y = overlap.matmul_all_to_all %h, %w2, %c2 on @ep grid_axes = [0]
      : tensor<64x48xf32>, tensor<48x32xf32>, tensor<64x32xf32>
      -> tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}

// CHECK-LABEL: func.func @experts
func.func @experts(%x: tensor<8x16x32xbf16>, %w: tensor<2x32x48xbf16>,
                   %c: tensor<2x64x48xf32>, %h: tensor<2x64x48xbf16>,
                   %w2: tensor<2x48x32xbf16>, %c2: tensor<2x64x32xf32>)
    -> (tensor<2x64x48xf32>, tensor<8x16x32xf32>) {
  // CHECK: overlap.all_to_all_matmul
  // CHECK-SAME: : tensor<8x16x32xbf16>, tensor<2x32x48xbf16>, tensor<2x64x48xf32> -> tensor<2x64x48xf32>
  %u = overlap.all_to_all_matmul %x, %w, %c on @ep grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [32, 32, 64], strategy = "mc2",
                                    bound = compute, predicted_us = 1.0,
                                    serial_us = 2.0>}
      : tensor<8x16x32xbf16>, tensor<2x32x48xbf16>, tensor<2x64x48xf32>
      -> tensor<2x64x48xf32>
  // CHECK: overlap.matmul_all_to_all
  // CHECK-SAME: : tensor<2x64x48xbf16>, tensor<2x48x32xbf16>, tensor<2x64x32xf32> -> tensor<8x16x32xf32>
  %y = overlap.matmul_all_to_all %h, %w2, %c2 on @ep grid_axes = [0]
      : tensor<2x64x48xbf16>, tensor<2x48x32xbf16>, tensor<2x64x32xf32>
      -> tensor<8x16x32xf32>
  return %u, %y : tensor<2x64x48xf32>, tensor<8x16x32xf32>
}

// CHECK-LABEL: func.func @tiles
func.func @tiles(%t: tensor<8x4x32xf32>, %d: tensor<8x4x32xf32>,
                 %m: memref<8x4x32xf32>, %n: memref<8x4x32xf32>)
    -> (tensor<8x4x32xf32>, tensor<8x4x32xf32>) {
  // CHECK: overlap.all_to_all %{{.*}} on @ep grid_axes = [0] : tensor<8x4x32xf32> -> tensor<8x4x32xf32>
  %a = overlap.all_to_all %t on @ep grid_axes = [0]
      : tensor<8x4x32xf32> -> tensor<8x4x32xf32>
  // CHECK: overlap.all_to_all %{{.*}} into %{{.*}} on @ep grid_axes = [0] : tensor<8x4x32xf32>, tensor<8x4x32xf32> -> tensor<8x4x32xf32>
  %b = overlap.all_to_all %t into %d on @ep grid_axes = [0]
      : tensor<8x4x32xf32>, tensor<8x4x32xf32> -> tensor<8x4x32xf32>
  // CHECK: overlap.all_to_all %{{.*}} into %{{.*}} on @ep grid_axes = [0] : memref<8x4x32xf32>, memref<8x4x32xf32>
  overlap.all_to_all %m into %n on @ep grid_axes = [0]
      : memref<8x4x32xf32>, memref<8x4x32xf32>
  return %a, %b : tensor<8x4x32xf32>, tensor<8x4x32xf32>
}

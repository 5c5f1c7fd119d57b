// RUN: overlap-opt %s | overlap-opt | FileCheck %s
// RUN: overlap-opt %s --mlir-print-op-generic | overlap-opt | FileCheck %s

shard.grid @tp(shape = 8)
shard.grid @grid2d(shape = 2x4)

// CHECK-LABEL: func.func @fused
func.func @fused(%a: tensor<4096x3072xf16>, %b: tensor<3072x8192xf16>,
                 %c: tensor<4096x8192xf16>, %cf: tensor<4096x8192xf32>,
                 %al: tensor<512x3072xf16>)
    -> (tensor<4096x8192xf16>, tensor<512x8192xf32>, tensor<4096x8192xf16>) {
  // CHECK: overlap.matmul_all_reduce %{{.*}}, %{{.*}}, %{{.*}} on @tp grid_axes = [0]
  // CHECK-SAME: {overlap.plan = #overlap.plan<tiles = [512, 896, 896, 896, 896], strategy = "mc2", bound = comm, predicted_us = 1282.8, serial_us = 1874.0>}
  // CHECK-SAME: : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16> -> tensor<4096x8192xf16>
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [512, 896, 896, 896, 896],
                                    strategy = "mc2", bound = comm,
                                    predicted_us = 1282.8, serial_us = 1874.0>}
      : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16>
      -> tensor<4096x8192xf16>
  // Accumulating in f32 from f16 factors.
  // CHECK: overlap.matmul_reduce_scatter %{{.*}} on @tp grid_axes = [0]
  // CHECK-SAME: tensor<4096x8192xf32> -> tensor<512x8192xf32>
  %s = overlap.matmul_reduce_scatter %a, %b, %cf on @tp grid_axes = [0]
      : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf32>
      -> tensor<512x8192xf32>
  // CHECK: overlap.all_gather_matmul %{{.*}} on @tp grid_axes = [0]
  // CHECK-SAME: {overlap.plan = #overlap.plan<tiles = [4096], strategy = "none", bound = compute, predicted_us = 2500.0, serial_us = 2500.25>}
  // CHECK-SAME: tensor<512x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16> -> tensor<4096x8192xf16>
  %g = overlap.all_gather_matmul %al, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [4096], strategy = "none",
                                    bound = compute, predicted_us = 2.5e3,
                                    serial_us = 2500.25>}
      : tensor<512x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16>
      -> tensor<4096x8192xf16>
  return %r, %s, %g : tensor<4096x8192xf16>, tensor<512x8192xf32>, tensor<4096x8192xf16>
}

// CHECK-LABEL: func.func @two_axes
func.func @two_axes(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>,
                    %c: tensor<64x16xbf16>) -> tensor<8x16xbf16> {
  // A group over both axes of a 2x4 grid has 8 ranks.
  // CHECK: overlap.matmul_reduce_scatter {{.*}} on @grid2d grid_axes = [1, 0]
  %s = overlap.matmul_reduce_scatter %a, %b, %c on @grid2d grid_axes = [1, 0]
      : tensor<64x32xbf16>, tensor<32x16xbf16>, tensor<64x16xbf16>
      -> tensor<8x16xbf16>
  return %s : tensor<8x16xbf16>
}

// CHECK-LABEL: func.func @chain
func.func @chain(%a1: tensor<10x100xf32>, %a2: tensor<100x5xf32>,
                 %a3: tensor<5x50xf32>) -> tensor<10x50xf32> {
  // CHECK: overlap.chain_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<10x100xf32>, tensor<100x5xf32>, tensor<5x50xf32> -> tensor<10x50xf32>
  %p = overlap.chain_matmul %a1, %a2, %a3
      : tensor<10x100xf32>, tensor<100x5xf32>, tensor<5x50xf32>
      -> tensor<10x50xf32>
  return %p : tensor<10x50xf32>
}

// CHECK-LABEL: func.func @tensor_collectives
func.func @tensor_collectives(%t: tensor<1024x64xf32>, %h: tensor<128x64xf16>)
    -> (tensor<1024x64xf32>, tensor<1024x64xf32>, tensor<128x64xf32>,
        tensor<1024x64xf16>) {
  // CHECK: overlap.all_reduce %{{.*}} on @tp grid_axes = [0] : tensor<1024x64xf32> -> tensor<1024x64xf32>
  %0 = overlap.all_reduce %t on @tp grid_axes = [0]
      : tensor<1024x64xf32> -> tensor<1024x64xf32>
  // CHECK: overlap.all_reduce %{{.*}} on @tp grid_axes = [0] reduction = <max> : tensor<1024x64xf32> -> tensor<1024x64xf32>
  %1 = overlap.all_reduce %t on @tp grid_axes = [0] reduction = <max>
      : tensor<1024x64xf32> -> tensor<1024x64xf32>
  // CHECK: overlap.reduce_scatter %{{.*}} on @tp grid_axes = [0] reduction = <avg> : tensor<1024x64xf32> -> tensor<128x64xf32>
  %2 = overlap.reduce_scatter %t on @tp grid_axes = [0] reduction = <avg>
      : tensor<1024x64xf32> -> tensor<128x64xf32>
  // CHECK: overlap.reduce_scatter %{{.*}} into %{{.*}} on @tp grid_axes = [0] : tensor<1024x64xf32>, tensor<128x64xf32> -> tensor<128x64xf32>
  %4 = overlap.reduce_scatter %t into %2 on @tp grid_axes = [0]
      : tensor<1024x64xf32>, tensor<128x64xf32> -> tensor<128x64xf32>
  // CHECK: overlap.all_gather %{{.*}} on @tp grid_axes = [0] : tensor<128x64xf16> -> tensor<1024x64xf16>
  %3 = overlap.all_gather %h on @tp grid_axes = [0]
      : tensor<128x64xf16> -> tensor<1024x64xf16>
  return %0, %1, %2, %3 : tensor<1024x64xf32>, tensor<1024x64xf32>,
                          tensor<128x64xf32>, tensor<1024x64xf16>
}

// CHECK-LABEL: func.func @memref_collectives
func.func @memref_collectives(%m: memref<1024x64xf32>, %o: memref<128x64xf32>,
                              %h: memref<128x64xf16>, %g: memref<1024x64xf16>,
                              %v: memref<128x64xf32, strided<[128, 1], offset: 64>>) {
  // CHECK: overlap.all_reduce %{{.*}} on @tp grid_axes = [0] reduction = <min> : memref<1024x64xf32>
  overlap.all_reduce %m on @tp grid_axes = [0] reduction = <min> : memref<1024x64xf32>
  // CHECK: overlap.all_reduce %{{.*}} on @tp grid_axes = [0] reduction = <prod> : memref<128x64xf32, strided<[128, 1], offset: 64>>
  overlap.all_reduce %v on @tp grid_axes = [0] reduction = <prod>
      : memref<128x64xf32, strided<[128, 1], offset: 64>>
  // CHECK: overlap.reduce_scatter %{{.*}} into %{{.*}} on @tp grid_axes = [0] : memref<1024x64xf32>, memref<128x64xf32>
  overlap.reduce_scatter %m into %o on @tp grid_axes = [0]
      : memref<1024x64xf32>, memref<128x64xf32>
  // CHECK: overlap.all_gather %{{.*}} into %{{.*}} on @tp grid_axes = [0] : memref<128x64xf16>, memref<1024x64xf16>
  overlap.all_gather %h into %g on @tp grid_axes = [0]
      : memref<128x64xf16>, memref<1024x64xf16>
  return
}

// CHECK-LABEL: func.func @streams
func.func @streams(%a0: memref<512x64xf32>, %b: memref<64x256xf32>,
                   %c0: memref<512x256xf32>, %c1: memref<512x256xf32>) {
  // CHECK: %[[SIG:.*]] = overlap.signals : !overlap.signals<2>
  %sig = overlap.signals : !overlap.signals<2>
  // CHECK: overlap.concurrent {
  overlap.concurrent {
    // CHECK-NEXT: overlap.stream compute {
    overlap.stream compute {
      // CHECK-NEXT: linalg.matmul
      linalg.matmul ins(%a0, %b : memref<512x64xf32>, memref<64x256xf32>)
                    outs(%c0 : memref<512x256xf32>)
      // CHECK-NEXT: overlap.signal %[[SIG]][0] : !overlap.signals<2>
      overlap.signal %sig[0] : !overlap.signals<2>
      linalg.matmul ins(%a0, %b : memref<512x64xf32>, memref<64x256xf32>)
                    outs(%c1 : memref<512x256xf32>)
      overlap.signal %sig[1] : !overlap.signals<2>
    }
    // CHECK: overlap.stream comm {
    overlap.stream comm {
      // CHECK-NEXT: overlap.wait %[[SIG]][0] : !overlap.signals<2>
      overlap.wait %sig[0] : !overlap.signals<2>
      // CHECK-NEXT: overlap.all_reduce
      overlap.all_reduce %c0 on @tp grid_axes = [0] : memref<512x256xf32>
      overlap.wait %sig[1] : !overlap.signals<2>
      overlap.all_reduce %c1 on @tp grid_axes = [0] : memref<512x256xf32>
    }
    // A stream name that is not an identifier prints as a string.
    // CHECK: overlap.stream "copy engine" {
    overlap.stream "copy engine" {
    }
  }
  return
}

// The group of an empty axis list is one rank.
// CHECK-LABEL: func.func @empty_axes
func.func @empty_axes(%t: tensor<7x3xf32>) -> tensor<7x3xf32> {
  // CHECK: overlap.reduce_scatter %{{.*}} on @tp grid_axes = [] : tensor<7x3xf32> -> tensor<7x3xf32>
  %0 = overlap.reduce_scatter %t on @tp grid_axes = []
      : tensor<7x3xf32> -> tensor<7x3xf32>
  return %0 : tensor<7x3xf32>
}

// Disjoint slices, one block argument each; a part no slice covers (rows
// 6..7 of the 3-D case) keeps its contents.
// CHECK-LABEL: func.func @tiles
func.func @tiles(%c: tensor<256x32xf32>, %d: tensor<4x8x16xf32>)
    -> (tensor<256x32xf32>, tensor<4x8x16xf32>) {
  // CHECK: %[[R:.*]] = overlap.tiles %{{.*}} : tensor<256x32xf32> (%[[T0:.*]] = [0, 0] [128, 32], %[[T1:.*]] = [128, 0] [128, 32]) {
  // CHECK-NEXT: overlap.yield %[[T1]], %[[T0]] : tensor<128x32xf32>, tensor<128x32xf32>
  // CHECK-NEXT: } attributes {note = "swap"}
  %r = overlap.tiles %c : tensor<256x32xf32>
      (%t0 = [0, 0] [128, 32], %t1 = [128, 0] [128, 32]) {
    overlap.yield %t1, %t0 : tensor<128x32xf32>, tensor<128x32xf32>
  } attributes {note = "swap"}
  // CHECK: overlap.tiles %{{.*}} : tensor<4x8x16xf32> (%{{.*}} = [0, 0, 0] [4, 2, 16], %{{.*}} = [0, 2, 0] [4, 4, 16])
  %s = overlap.tiles %d : tensor<4x8x16xf32>
      (%u0 = [0, 0, 0] [4, 2, 16], %u1 = [0, 2, 0] [4, 4, 16]) {
    %g = overlap.all_reduce %u1 on @tp grid_axes = [0]
        : tensor<4x4x16xf32> -> tensor<4x4x16xf32>
    overlap.yield %u0, %g : tensor<4x2x16xf32>, tensor<4x4x16xf32>
  }
  return %r, %s : tensor<256x32xf32>, tensor<4x8x16xf32>
}

// Offsets may be index values (rank-major all-gather tiles: the rows of
// block (r + s) mod G); mixed with static ones, in order.
// CHECK-LABEL: func.func @tiles_dynamic
// CHECK: overlap.tiles %{{.*}} : tensor<256x32xf32> (%{{.*}} = [%[[X:.*]], 0] [64, 32], %{{.*}} = [128, 0] [64, 32], %{{.*}} = [%[[Y:.*]], 0] [64, 32])
func.func @tiles_dynamic(%c: tensor<256x32xf32>, %x: index, %y: index) -> tensor<256x32xf32> {
  %r = overlap.tiles %c : tensor<256x32xf32>
      (%t0 = [%x, 0] [64, 32], %t1 = [128, 0] [64, 32], %t2 = [%y, 0] [64, 32]) {
    overlap.yield %t2, %t1, %t0 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>
  }
  return %r : tensor<256x32xf32>
}

// RUN: overlap-opt %s --overlap-plan="strategy=uniform:64" --overlap-decompose -split-input-file | FileCheck %s
// RUN: overlap-opt %s --overlap-plan="strategy=uniform:64" --overlap-decompose --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --canonicalize -split-input-file | FileCheck %s --check-prefix=BUF

// The shape that keeps bufferization linear in the number of tiles: one
// overlap.tiles per fused op whose slices are the tiles, each tile's ops on
// its own slice, and no chain of tensor.insert_slice through one growing
// tensor (one-shot bufferization's aliasing analysis of such a chain grows
// with the cube of the tiles: 255 tiles took ten minutes). After
// bufferization every tile works in C's buffer: 64 views, no copy.

// CHECK-LABEL: func.func @all_reduce
// CHECK-NOT: tensor.insert_slice
// CHECK: overlap.tiles %arg2 : tensor<8192x16xf32> ({{((, )?%arg[0-9]+ = \[[0-9]+, 0\] \[128, 16\]){64}[)]}} {
// CHECK-COUNT-64: overlap.all_reduce
// CHECK-NEXT: overlap.yield
// CHECK-NOT: tensor.insert_slice
// CHECK-NOT: overlap.tiles
// BUF-LABEL: func.func @all_reduce
// BUF-NOT: memref.copy
// BUF-COUNT-64: overlap.all_reduce %subview{{.*}} : memref<128x16xf32, strided<[16, 1]{{.*}}>>
// BUF-NOT: memref.copy
// BUF: return %arg2
shard.grid @tp(shape = 4)
func.func @all_reduce(%a: tensor<8192x16xf32>, %b: tensor<16x16xf32>,
                      %c: tensor<8192x16xf32>) -> tensor<8192x16xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<8192x16xf32>, tensor<16x16xf32>, tensor<8192x16xf32> -> tensor<8192x16xf32>
  return %r : tensor<8192x16xf32>
}

// -----

// CHECK-LABEL: func.func @all_gather
// CHECK: overlap.tiles %{{.*}} : tensor<4x2048x16xf32> ({{((, )?%arg[0-9]+ = \[0, [0-9]+, 0\] \[4, 32, 16\]){64}[)]}} {
// CHECK-COUNT-64: linalg.batch_matmul
// CHECK-NEXT: overlap.yield
// CHECK-NOT: tensor.insert_slice
// BUF-LABEL: func.func @all_gather
// BUF-NOT: memref.copy
// BUF-COUNT-64: overlap.all_gather
// BUF-NOT: memref.copy
// BUF: return
shard.grid @tp(shape = 4)
func.func @all_gather(%a: tensor<2048x16xf32>, %b: tensor<16x16xf32>,
                      %c: tensor<8192x16xf32>) -> tensor<8192x16xf32> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      : tensor<2048x16xf32>, tensor<16x16xf32>, tensor<8192x16xf32> -> tensor<8192x16xf32>
  return %r : tensor<8192x16xf32>
}

// RUN: overlap-opt %s --overlap-schedule-streams -split-input-file | FileCheck %s
// RUN: overlap-opt %s --overlap-schedule-streams="testing-drop-waits=true" -split-input-file | FileCheck %s --check-prefix=DROP

shard.grid @tp(shape = 4)

// All-reduce tiles: each reduce waits for its own matmul, and the second
// matmul (rows 128..255) does not wait for the first reduce (rows 0..127).
// CHECK-LABEL: func.func @all_reduce_tiles
// CHECK: %[[S:.*]] = overlap.signals : !overlap.signals<2>
// CHECK-NEXT: overlap.concurrent {
// CHECK-NEXT: overlap.stream compute {
// CHECK-NEXT: linalg.matmul {{.*}} outs(%[[C0:.*]] : memref<128x32xf32, strided<[32, 1]>>)
// CHECK-NEXT: overlap.signal %[[S]][0]
// CHECK-NEXT: linalg.matmul {{.*}} outs(%[[C1:.*]] : memref<128x32xf32, strided<[32, 1], offset: 4096>>)
// CHECK-NEXT: overlap.signal %[[S]][1]
// CHECK-NEXT: }
// CHECK-NEXT: overlap.stream comm {
// CHECK-NEXT: overlap.wait %[[S]][0]
// CHECK-NEXT: overlap.all_reduce %[[C0]]
// CHECK-NEXT: overlap.wait %[[S]][1]
// CHECK-NEXT: overlap.all_reduce %[[C1]]
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
// DROP-LABEL: func.func @all_reduce_tiles
// DROP: overlap.signals : !overlap.signals<2>
// DROP-NOT: overlap.wait
// DROP: return
func.func @all_reduce_tiles(%a: memref<256x64xf32>, %b: memref<64x32xf32>, %c: memref<256x32xf32>) {
  %a0 = memref.subview %a[0, 0] [128, 64] [1, 1] : memref<256x64xf32> to memref<128x64xf32, strided<[64, 1]>>
  %c0 = memref.subview %c[0, 0] [128, 32] [1, 1] : memref<256x32xf32> to memref<128x32xf32, strided<[32, 1]>>
  linalg.matmul ins(%a0, %b : memref<128x64xf32, strided<[64, 1]>>, memref<64x32xf32>) outs(%c0 : memref<128x32xf32, strided<[32, 1]>>)
  overlap.all_reduce %c0 on @tp grid_axes = [0] : memref<128x32xf32, strided<[32, 1]>>
  %a1 = memref.subview %a[128, 0] [128, 64] [1, 1] : memref<256x64xf32> to memref<128x64xf32, strided<[64, 1], offset: 8192>>
  %c1 = memref.subview %c[128, 0] [128, 32] [1, 1] : memref<256x32xf32> to memref<128x32xf32, strided<[32, 1], offset: 4096>>
  linalg.matmul ins(%a1, %b : memref<128x64xf32, strided<[64, 1], offset: 8192>>, memref<64x32xf32>) outs(%c1 : memref<128x32xf32, strided<[32, 1], offset: 4096>>)
  overlap.all_reduce %c1 on @tp grid_axes = [0] : memref<128x32xf32, strided<[32, 1], offset: 4096>>
  return
}

// -----

shard.grid @tp(shape = 4)

// No redundant wait: the second collective on the same buffer is ordered
// after the first by its own stream; a later compute op that overwrites
// what comm read waits once, for the latest comm op (write after read).
// CHECK-LABEL: func.func @no_redundant_wait
// CHECK: %[[S:.*]] = overlap.signals : !overlap.signals<2>
// CHECK: overlap.stream compute {
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[X:.*]] : memref<64x8xf32>)
// CHECK-NEXT: overlap.signal %[[S]][0]
// CHECK-NEXT: overlap.wait %[[S]][1]
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[X]] : memref<64x8xf32>)
// CHECK-NEXT: }
// CHECK-NEXT: overlap.stream comm {
// CHECK-NEXT: overlap.wait %[[S]][0]
// CHECK-NEXT: overlap.all_reduce %[[X]]
// CHECK-NEXT: overlap.all_reduce %[[X]]
// CHECK-NEXT: overlap.signal %[[S]][1]
// CHECK-NEXT: }
func.func @no_redundant_wait(%x: memref<64x8xf32>) {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  linalg.fill ins(%one : f32) outs(%x : memref<64x8xf32>)
  overlap.all_reduce %x on @tp grid_axes = [0] : memref<64x8xf32>
  overlap.all_reduce %x on @tp grid_axes = [0] reduction = <max> : memref<64x8xf32>
  linalg.fill ins(%two : f32) outs(%x : memref<64x8xf32>)
  return
}

// -----

shard.grid @tp(shape = 2)

// Reduce-scatter tile: the packed buffer is computed on compute and read by
// comm; the copy of the scattered rows into the result follows its
// producer onto comm, so compute never waits. Views and allocations move in
// front of the concurrent region.
// CHECK-LABEL: func.func @reduce_scatter_tile
// CHECK: memref.alloc() {{.*}} : memref<2x64x16xf32>
// CHECK: memref.collapse_shape
// CHECK: memref.alloc() {{.*}} : memref<64x16xf32>
// CHECK: %[[S:.*]] = overlap.signals : !overlap.signals<1>
// CHECK: overlap.stream compute {
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.batch_matmul
// CHECK-NEXT: overlap.signal %[[S]][0]
// CHECK-NEXT: }
// CHECK-NEXT: overlap.stream comm {
// CHECK-NEXT: overlap.wait %[[S]][0]
// CHECK-NEXT: overlap.reduce_scatter
// CHECK-NEXT: memref.copy
// CHECK-NEXT: }
func.func @reduce_scatter_tile(%a: memref<128x8xf32>, %b: memref<8x16xf32>, %out: memref<64x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %a3 = memref.expand_shape %a [[0, 1], [2]] output_shape [2, 64, 8] : memref<128x8xf32> into memref<2x64x8xf32>
  %pk = memref.alloc() {alignment = 64 : i64} : memref<2x64x16xf32>
  linalg.fill ins(%zero : f32) outs(%pk : memref<2x64x16xf32>)
  linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%a3, %b : memref<2x64x8xf32>, memref<8x16xf32>) outs(%pk : memref<2x64x16xf32>)
  %flat = memref.collapse_shape %pk [[0, 1], [2]] : memref<2x64x16xf32> into memref<128x16xf32>
  %r = memref.alloc() {alignment = 64 : i64} : memref<64x16xf32>
  overlap.reduce_scatter %flat into %r on @tp grid_axes = [0] : memref<128x16xf32>, memref<64x16xf32>
  memref.copy %r, %out : memref<64x16xf32> to memref<64x16xf32>
  return
}

// -----

shard.grid @tp(shape = 4)

// A layout that is not static overlaps everything of its root: the second
// matmul must wait for the reduce of the first tile (it might overlap).
// CHECK-LABEL: func.func @dynamic_layout
// CHECK: overlap.stream compute {
// CHECK-NEXT: linalg.matmul
// CHECK-NEXT: overlap.signal %{{.*}}[0]
// CHECK-NEXT: overlap.wait %{{.*}}[1]
// CHECK-NEXT: linalg.matmul
// CHECK-NEXT: overlap.signal %{{.*}}[2]
// CHECK-NEXT: }
// CHECK-NEXT: overlap.stream comm {
// CHECK-NEXT: overlap.wait %{{.*}}[0]
// CHECK-NEXT: overlap.all_reduce
// CHECK-NEXT: overlap.signal %{{.*}}[1]
// CHECK-NEXT: overlap.wait %{{.*}}[2]
// CHECK-NEXT: overlap.all_reduce
func.func @dynamic_layout(%a: memref<128x64xf32>, %b: memref<64x32xf32>, %c: memref<256x32xf32>, %off: index) {
  %c0 = memref.subview %c[%off, 0] [128, 32] [1, 1] : memref<256x32xf32> to memref<128x32xf32, strided<[32, 1], offset: ?>>
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x32xf32>) outs(%c0 : memref<128x32xf32, strided<[32, 1], offset: ?>>)
  overlap.all_reduce %c0 on @tp grid_axes = [0] : memref<128x32xf32, strided<[32, 1], offset: ?>>
  %c1 = memref.subview %c[128, 0] [128, 32] [1, 1] : memref<256x32xf32> to memref<128x32xf32, strided<[32, 1], offset: 4096>>
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x32xf32>) outs(%c1 : memref<128x32xf32, strided<[32, 1], offset: 4096>>)
  overlap.all_reduce %c1 on @tp grid_axes = [0] : memref<128x32xf32, strided<[32, 1], offset: 4096>>
  return
}

// -----

// Without a collective nothing changes.
// CHECK-LABEL: func.func @compute_only
// CHECK-NOT: overlap.concurrent
func.func @compute_only(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) {
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return
}

// -----

shard.grid @tp(shape = 4)

// A linalg.generic that reads a buffer in its body (a gather's
// tensor.extract, bufferized to memref.load of a captured buffer) reads it
// though it is no operand: it waits for the all-reduce that writes it.
// (Without the body's reads in its footprint it ran beside the all-reduce
// and read the sum before it was made: a wrong result.)
// CHECK-LABEL: func.func @gather_reads_a_collective_result
// CHECK: %[[S:.*]] = overlap.signals : !overlap.signals<2>
// CHECK: overlap.stream compute {
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[V:.*]] : memref<16x8xf32>)
// CHECK-NEXT: overlap.signal %[[S]][0]
// CHECK-NEXT: overlap.wait %[[S]][1]
// CHECK-NEXT: linalg.generic
// CHECK: overlap.stream comm {
// CHECK-NEXT: overlap.wait %[[S]][0]
// CHECK-NEXT: overlap.all_reduce %[[V]]
// CHECK-NEXT: overlap.signal %[[S]][1]
func.func @gather_reads_a_collective_result(%v: memref<16x8xf32>, %idx: memref<16x2xindex>, %out: memref<16x2xf32>) {
  %zero = arith.constant 1.0 : f32
  linalg.fill ins(%zero : f32) outs(%v : memref<16x8xf32>)
  overlap.all_reduce %v on @tp grid_axes = [0] : memref<16x8xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%idx : memref<16x2xindex>) outs(%out : memref<16x2xf32>) {
  ^bb0(%col: index, %o: f32):
    %i = linalg.index 0 : index
    %x = memref.load %v[%i, %col] : memref<16x8xf32>
    linalg.yield %x : f32
  }
  return
}

// RUN: overlap-opt %s --pass-pipeline='builtin.module(func.func(overlap-linalg-to-gpu))' -split-input-file -verify-diagnostics | FileCheck %s
// RUN: overlap-opt %s --pass-pipeline='builtin.module(func.func(overlap-linalg-to-gpu{block-size=128}))' -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=B128

#id = affine_map<(d0, d1) -> (d0, d1)>

// An elementwise op on a strided tile: one thread per element over the
// flattened 100x300 space (30000 points, ceil(30000/256) = 118 blocks),
// guarded, delinearized row-major; the body reads and writes through the
// original (strided) memrefs.
// CHECK-LABEL: func.func @relu
// CHECK-DAG: %[[TOTAL:.*]] = arith.constant 30000 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[BLOCKS:.*]] = arith.constant 118 : index
// CHECK-DAG: %[[C300:.*]] = arith.constant 300 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]]
// CHECK: %[[BASE:.*]] = arith.muli %[[BX]], %[[C256]]
// CHECK: %[[LIN:.*]] = arith.addi %[[BASE]], %[[TX]]
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[LIN]], %[[TOTAL]]
// CHECK: scf.if %[[IN]]
// CHECK: %[[J:.*]] = arith.remui %[[LIN]], %[[C300]] : index
// CHECK: %[[I:.*]] = arith.divui %[[LIN]], %[[C300]] : index
// CHECK: %[[JS:.*]] = arith.muli %[[J]],
// CHECK: %[[JJ:.*]] = arith.addi %{{.*}}, %[[JS]]
// CHECK: %[[IS:.*]] = arith.muli %[[I]],
// CHECK: %[[II:.*]] = arith.addi %{{.*}}, %[[IS]]
// CHECK: %[[IA:.*]] = affine.apply #{{.*}}(%[[II]])
// CHECK: %[[JA:.*]] = affine.apply #{{.*}}(%[[JJ]])
// CHECK: memref.load %{{.*}}[%[[IA]], %[[JA]]] : memref<100x300xf32, strided<[600, 1], offset: ?>>
// CHECK: arith.maximumf
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<100x300xf32>
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// B128-LABEL: func.func @relu
// B128-DAG: %[[C128:.*]] = arith.constant 128 : index
// B128-DAG: %[[B:.*]] = arith.constant 235 : index
// B128: gpu.launch blocks({{.*}}) in (%{{.*}} = %[[B]], {{.*}} threads({{.*}}) in (%{{.*}} = %[[C128]]
func.func @relu(%a: memref<100x300xf32, strided<[600, 1], offset: ?>>, %b: memref<100x300xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<100x300xf32, strided<[600, 1], offset: ?>>) outs(%b : memref<100x300xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Ops the runtime lowers (a matmul, a contiguous copy, a strided-to-packed
// copy, a zero fill: overlap_memset) are left alone; the fill of 1.0 (whose
// bytes differ) becomes a kernel in its stream, in place, so the
// signal/wait around it still orders it.
// CHECK-LABEL: func.func @mixed
// CHECK: overlap.stream compute
// CHECK-NEXT: linalg.matmul
// CHECK-NEXT: overlap.signal
// CHECK: overlap.stream comm
// CHECK-NEXT: overlap.wait
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %{{.*}} : memref<64x32xf32>
// CHECK: gpu.terminator
// CHECK: linalg.fill
// CHECK-NOT: gpu.launch
// CHECK: memref.copy
// CHECK: linalg.copy
func.func @mixed(%a: memref<64x16xf32>, %b: memref<16x32xf32>, %c: memref<64x32xf32>, %d: memref<64x32xf32>, %e: memref<64x64xf32>, %f: memref<64x32xf32>) {
  %s = overlap.signals : !overlap.signals<1>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  overlap.concurrent {
    overlap.stream compute {
      linalg.matmul ins(%a, %b : memref<64x16xf32>, memref<16x32xf32>) outs(%c : memref<64x32xf32>)
      overlap.signal %s[0] : !overlap.signals<1>
    }
    overlap.stream comm {
      overlap.wait %s[0] : !overlap.signals<1>
      linalg.fill ins(%one : f32) outs(%d : memref<64x32xf32>)
      linalg.fill ins(%zero : f32) outs(%c : memref<64x32xf32>)
    }
  }
  memref.copy %c, %d : memref<64x32xf32> to memref<64x32xf32>
  %sub = memref.subview %e[0, 0] [64, 32] [1, 1] : memref<64x64xf32> to memref<64x32xf32, strided<[64, 1]>>
  linalg.copy ins(%sub : memref<64x32xf32, strided<[64, 1]>>) outs(%f : memref<64x32xf32>)
  return
}

// -----

// A copy the runtime cannot express (rank 4) becomes a kernel; so does a
// transpose.
// CHECK-LABEL: func.func @copies
// CHECK: gpu.launch
// CHECK: memref.load %{{.*}} : memref<2x3x4x5xf32, strided<[120, 40, 10, 1]>>
// CHECK: memref.store %{{.*}} : memref<2x3x4x5xf32>
// CHECK: gpu.launch
// CHECK: memref.load %{{.*}} : memref<8x4xf32>
// CHECK: memref.store %{{.*}} : memref<4x8xf32>
// CHECK-NOT: memref.copy
// CHECK-NOT: linalg.transpose
func.func @copies(%a: memref<2x3x4x5xf32, strided<[120, 40, 10, 1]>>, %b: memref<2x3x4x5xf32>, %t: memref<8x4xf32>, %u: memref<4x8xf32>) {
  memref.copy %a, %b : memref<2x3x4x5xf32, strided<[120, 40, 10, 1]>> to memref<2x3x4x5xf32>
  linalg.transpose ins(%t : memref<8x4xf32>) outs(%u : memref<4x8xf32>) permutation = [1, 0]
  return
}

// -----

// No parallel dimension: a full reduction and a rank-0 fill run in one
// thread (1 block of 1 thread), the reduction as a sequential loop.
// CHECK-LABEL: func.func @single_thread
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1{{(_[0-9]+)?}}, %{{.*}} = %c1{{(_[0-9]+)?}}, %{{.*}} = %c1{{(_[0-9]+)?}}) threads({{.*}}) in (%{{.*}} = %c1{{(_[0-9]+)?}}, %{{.*}} = %c1{{(_[0-9]+)?}}, %{{.*}} = %c1{{(_[0-9]+)?}})
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// CHECK: gpu.terminator
func.func @single_thread(%a: memref<64xf32>, %r: memref<f32>, %z: memref<f32>) {
  linalg.reduce ins(%a : memref<64xf32>) outs(%r : memref<f32>) dimensions = [0]
    (%x: f32, %acc: f32) {
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%z : memref<f32>)
  return
}

// -----

// Tensors are not touched (the pass runs on bufferized programs).
// CHECK-LABEL: func.func @tensors
// CHECK: linalg.fill
// CHECK-NOT: gpu.launch
func.func @tensors(%t: tensor<4xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %r = linalg.fill ins(%zero : f32) outs(%t : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A reduction before the parallel dimension (a column sum): the parallel
// dimension goes first, one thread per column (32 threads busy), each
// summing its column in a loop.
// CHECK-LABEL: func.func @column_sum
// CHECK-DAG: %[[N:.*]] = arith.constant 32 : index
// CHECK: gpu.launch
// CHECK: arith.cmpi ult, %{{.*}}, %[[N]]
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step
// CHECK: memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<64x32xf32>
// CHECK: arith.addf
func.func @column_sum(%a: memref<64x32xf32>, %r: memref<32xf32>) {
  linalg.reduce ins(%a : memref<64x32xf32>) outs(%r : memref<32xf32>) dimensions = [0]
    (%x: f32, %acc: f32) {
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
  return
}

// -----

// Empty iteration spaces launch nothing: a static one is dropped, a
// dynamic one is guarded (a grid of 0 blocks is an invalid launch).
// CHECK-LABEL: func.func @empty
// CHECK: %[[D:.*]] = memref.dim
// CHECK: %[[T:.*]] = arith.muli %[[D]]
// CHECK: %[[ANY:.*]] = arith.cmpi ne, %[[T]]
// CHECK: scf.if %[[ANY]]
// CHECK: gpu.launch
// CHECK-NOT: gpu.launch
func.func @empty(%o: memref<0x4xf32>, %d: memref<?x4xf32>) {
  %z = arith.constant 2.0 : f32
  linalg.fill ins(%z : f32) outs(%o : memref<0x4xf32>)
  linalg.fill ins(%z : f32) outs(%d : memref<?x4xf32>)
  return
}

// -----

// i1 elements take one byte each: the runtime copies them by bytes, so
// the copy stays for it (no kernel).
// CHECK-LABEL: func.func @bits
// CHECK-NOT: gpu.launch
// CHECK: memref.copy
func.func @bits(%a: memref<16xi1>, %b: memref<16xi1>) {
  memref.copy %a, %b : memref<16xi1> to memref<16xi1>
  return
}

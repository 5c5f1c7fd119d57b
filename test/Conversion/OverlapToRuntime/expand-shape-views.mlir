// RUN: overlap-opt %s --overlap-expand-shape-views --split-input-file | FileCheck %s
// RUN: overlap-opt %s --overlap-expand-shape-views --expand-strided-metadata --split-input-file -o /dev/null

// One dim into two dynamic ones (what crashes MLIR 22's
// expand-strided-metadata): a view with the row-major strides.
// CHECK-LABEL: func.func @two_dynamic
// CHECK-SAME: (%[[M:.*]]: memref<?x2xf32>, %[[G:.*]]: index, %[[S:.*]]: index)
// CHECK: %[[ST:.*]] = arith.muli %[[S]], %{{.*}} : index
// CHECK: memref.reinterpret_cast %[[M]] to offset: [0], sizes: [%[[G]], %[[S]], 2], strides: [%[[ST]], 2, 1]
// CHECK-NOT: memref.expand_shape
func.func @two_dynamic(%m: memref<?x2xf32>, %g: index, %s: index) -> memref<?x?x2xf32> {
  %e = memref.expand_shape %m [[0, 1], [2]] output_shape [%g, %s, 2] : memref<?x2xf32> into memref<?x?x2xf32>
  return %e : memref<?x?x2xf32>
}

// -----

// One dynamic dim in the group: upstream's.
// CHECK-LABEL: func.func @one_dynamic
// CHECK: memref.expand_shape
func.func @one_dynamic(%m: memref<?x2xf32>, %g: index) -> memref<?x3x2xf32> {
  %e = memref.expand_shape %m [[0, 1], [2]] output_shape [%g, 3, 2] : memref<?x2xf32> into memref<?x3x2xf32>
  return %e : memref<?x3x2xf32>
}

// RUN: overlap-opt %s --split-input-file --overlap-check-slice-bounds | FileCheck %s

// A dynamic size from an argument: checked (not negative, stride positive,
// the last row inside the source's 8), with the argument named.
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[N:.*]]: index)
// CHECK: %[[EIGHT:.*]] = arith.constant 8 : index
// CHECK: %[[NEG:.*]] = arith.cmpi sge, %[[N]], %{{.*}} : index
// CHECK: cf.assert %[[NEG]], "tensor.extract_slice at {{.*}}: dimension 0 (offset 0, size ? (from argument #1 of @rows), stride 1): the size is negative"
// CHECK: cf.assert %{{.*}}, "tensor.extract_slice at {{.*}}: dimension 0 (offset 0, size ? (from argument #1 of @rows), stride 1): the stride is not positive"
// CHECK: arith.cmpi slt, %{{.*}}, %[[EIGHT]] : index
// CHECK: arith.divsi
// CHECK: cf.assert %{{.*}}, "tensor.extract_slice at {{.*}}: dimension 0 (offset 0, size ? (from argument #1 of @rows), stride 1) reaches outside its source (its extent 8)"
// Dimension 1 is static: no check.
// CHECK-NOT: dimension 1
// CHECK: tensor.extract_slice %[[X]][0, 0] [%[[N]], 4] [1, 1]
// CHECK: cf.assert %{{.*}}, "tensor.insert_slice at {{.*}}: dimension 0 (offset 0, size ? (from argument #1 of @rows), stride 1) reaches outside its destination (its extent 8)"
// CHECK: tensor.insert_slice
func.func @rows(%x: tensor<8x4xf32>, %n: index) -> tensor<8x4xf32> {
  %d = tensor.extract_slice %x[0, 0] [%n, 4] [1, 1] : tensor<8x4xf32> to tensor<?x4xf32>
  %z = tensor.empty() : tensor<8x4xf32>
  %o = tensor.insert_slice %d into %z[0, 0] [%n, 4] [1, 1] : tensor<?x4xf32> into tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

// A boxed entry scalar (tensor<index>, read with tensor.extract) is named
// too; a dynamic source extent is read with tensor.dim.
// CHECK-LABEL: func.func @boxed_offset
// CHECK: %[[DIM:.*]] = tensor.dim %arg0, %{{.*}} : tensor<?x4xf32>
// CHECK: arith.cmpi slt, %{{.*}}, %[[DIM]] : index
// CHECK: cf.assert %{{.*}}, "tensor.extract_slice at {{.*}}: dimension 0 (offset ? (from argument #1 of @boxed_offset), size 2, stride 1) reaches outside its source (its run-time extent)"
func.func @boxed_offset(%x: tensor<?x4xf32>, %k: tensor<index>) -> tensor<2x4xf32> {
  %i = tensor.extract %k[] : tensor<index>
  %d = tensor.extract_slice %x[%i, 0] [2, 4] [1, 1] : tensor<?x4xf32> to tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

// -----

// Static slices are left to the tensor verifiers.
// CHECK-LABEL: func.func @static
// CHECK-NOT: cf.assert
func.func @static(%x: tensor<8x4xf32>) -> tensor<2x4xf32> {
  %d = tensor.extract_slice %x[6, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

// -----

// An element at a dynamic index is a slice of one: checked on the dynamic
// dimension only; a 0-d read (a boxed scalar) and the reads inside a
// linalg body are not.
// CHECK-LABEL: func.func @element
// CHECK: cf.assert %{{.*}}, "tensor.extract at {{.*}}: dimension 0 (offset ? (from argument #1 of @element), size 1, stride 1) reaches outside its source (its extent 8)"
// CHECK-NOT: dimension 1 (
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<8x4xf32>
// CHECK: cf.assert %{{.*}}, "tensor.insert at {{.*}}: dimension 0 (offset ? (from argument #1 of @element), size 1, stride 1) reaches outside its destination (its extent 8)"
// CHECK: tensor.insert
// CHECK-NOT: cf.assert
// CHECK: linalg.generic
// CHECK: return
func.func @element(%x: tensor<8x4xf32>, %i: index, %s: tensor<index>) -> (f32, tensor<8x4xf32>) {
  %c1 = arith.constant 1 : index
  %j = tensor.extract %s[] : tensor<index>
  %v = tensor.extract %x[%i, %c1] : tensor<8x4xf32>
  %w = tensor.insert %v into %x[%i, %c1] : tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<8x4xf32>) {
  ^bb0(%o: f32):
    %r = linalg.index 0 : index
    %y = tensor.extract %w[%r, %j] : tensor<8x4xf32>
    linalg.yield %y : f32
  } -> tensor<8x4xf32>
  return %v, %g : f32, tensor<8x4xf32>
}

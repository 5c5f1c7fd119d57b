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

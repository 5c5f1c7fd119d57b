// RUN: overlap-opt %s --pass-pipeline='builtin.module(func.func(convert-elementwise-to-linalg),overlap-fold-elementwise-chains)' | FileCheck %s

// An in-place chain (arith on tensors) becomes one generic writing the
// chain's first destination, the scalar ops in order.
// CHECK-LABEL: func.func @chain(
// CHECK-SAME: %[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>)
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[Y]], %[[Y]], %[[X]] : {{.*}}) outs(%[[X]] : tensor<4xf32>)
// CHECK-NEXT: ^bb0(
// CHECK-NEXT: arith.addf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.subf
// CHECK-NEXT: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[G]]
func.func @chain(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %y : tensor<4xf32>
  %1 = arith.mulf %0, %y : tensor<4xf32>
  %2 = arith.subf %1, %x : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// A value used twice is not fused (its producer would be computed twice).
// CHECK-LABEL: func.func @shared(
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: linalg.generic
func.func @shared(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.tanh %x : tensor<4xf32>
  %1 = arith.mulf %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// The JAX importer's form (a tensor.empty destination) is left as it is.
// CHECK-LABEL: func.func @empty_destinations(
// CHECK-COUNT-2: linalg.generic
#id = affine_map<(d0) -> (d0)>
func.func @empty_destinations(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e0 = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e0 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e1 = tensor.empty() : tensor<4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%0 : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// RUN: overlap-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(overlap-tosa-zero-points))' \
// RUN:   | FileCheck %s

// Zero points as arguments: each operand minus its zero point, read by
// every element, then a batch matmul into a zero fill.
// CHECK-LABEL: func.func @args_f32
// CHECK-SAME: %[[A:.*]]: tensor<2x5x3xf32>, %[[B:.*]]: tensor<2x3x4xf32>, %[[ZP:.*]]: tensor<1xf32>
// CHECK: %[[A0:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[ZP]] : tensor<2x5x3xf32>, tensor<1xf32>)
// CHECK: arith.subf
// CHECK: %[[B0:.*]] = linalg.generic {{.*}} ins(%[[B]], %[[ZP]] : tensor<2x3x4xf32>, tensor<1xf32>)
// CHECK: %[[F:.*]] = linalg.fill
// CHECK: linalg.batch_matmul ins(%[[A0]], %[[B0]] : {{.*}}) outs(%[[F]] : tensor<2x5x4xf32>)
// CHECK-NOT: tosa.matmul
func.func @args_f32(%a: tensor<2x5x3xf32>, %b: tensor<2x3x4xf32>, %zp: tensor<1xf32>) -> tensor<2x5x4xf32> {
  %c = tosa.matmul %a, %b, %zp, %zp : (tensor<2x5x3xf32>, tensor<2x3x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x5x4xf32>
  return %c : tensor<2x5x4xf32>
}

// -----

// Integers are widened to the accumulator's type before the subtraction.
// CHECK-LABEL: func.func @args_i8
// CHECK: arith.extsi {{.*}} : i8 to i32
// CHECK: arith.extsi {{.*}} : i8 to i32
// CHECK: arith.subi {{.*}} : i32
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x4x3xi32>
func.func @args_i8(%a: tensor<1x4x8xi8>, %b: tensor<1x8x3xi8>, %azp: tensor<1xi8>, %bzp: tensor<1xi8>) -> tensor<1x4x3xi32> {
  %c = tosa.matmul %a, %b, %azp, %bzp : (tensor<1x4x8xi8>, tensor<1x8x3xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x3xi32>
  return %c : tensor<1x4x3xi32>
}

// -----

// Constant zero points are upstream's tosa-to-linalg-named's.
// CHECK-LABEL: func.func @constant
// CHECK: tosa.matmul
func.func @constant(%a: tensor<1x4x8xf32>, %b: tensor<1x8x3xf32>) -> tensor<1x4x3xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %c = tosa.matmul %a, %b, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x3xf32>
  return %c : tensor<1x4x3xf32>
}

// -----

// What shard-partition makes of a sharded tosa.matmul, used by more than
// a return (the compile's input repair does not apply): refused.
func.func @contradicting(%a: tensor<1x4x8xf32>, %b: tensor<1x8x32xf32>) -> tensor<2x16x32xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  // expected-error @+1 {{has result type 'tensor<2x16x32xf32>' but its operands 'tensor<1x4x8xf32>' and 'tensor<1x8x32xf32>' give [1, 4, 32] (dimension 0)}}
  %c = tosa.matmul %a, %b, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x16x32xf32>
  %d = tosa.abs %c : (tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  return %d : tensor<2x16x32xf32>
}

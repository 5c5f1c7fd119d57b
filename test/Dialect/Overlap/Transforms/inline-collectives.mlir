// RUN: overlap-opt %s --split-input-file --overlap-inline-collectives | FileCheck %s

// A collective in a function the entry calls: inlined (only the entry gets
// the run-time context), through a callee of a callee, and the callee
// erased; a call of a function without shard ops is kept.

shard.grid @g(shape = 4)

// CHECK-NOT: func.func private @sum
func.func private @sum(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %r = shard.all_reduce %x on @g grid_axes = [0] : tensor<4x3xf32> -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// CHECK-NOT: func.func private @twice
func.func private @twice(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %a = func.call @sum(%x) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %i = shard.process_linear_index on @g : index
  %b = func.call @sum(%a) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %b : tensor<4x3xf32>
}

// CHECK: func.func private @plain
func.func private @plain(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  return %x : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @f
// CHECK-NEXT: %[[A:.*]] = shard.all_reduce %arg0
// CHECK-NEXT: shard.process_linear_index
// CHECK-NEXT: %[[B:.*]] = shard.all_reduce %[[A]]
// CHECK-NEXT: %[[C:.*]] = call @plain(%[[B]])
// CHECK-NEXT: return %[[C]]
func.func @f(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %r = func.call @twice(%x) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %p = func.call @plain(%r) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %p : tensor<4x3xf32>
}

// -----

// No call: nothing changes.
shard.grid @g(shape = 4)

// CHECK-LABEL: func.func @alone
// CHECK-NEXT: shard.all_reduce
func.func @alone(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.all_reduce %x on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

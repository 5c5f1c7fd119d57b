// RUN: overlap-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// overlap.shift round-trips on tensors (with and without a destination)
// and on memrefs; one case per verifier error.

shard.grid @tp(shape = 4)
// CHECK-LABEL: func.func @forms
// CHECK: overlap.shift %{{.*}} by 3 on @tp grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK: overlap.shift %{{.*}} by -1 into %{{.*}} on @tp grid_axes = [0] : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK: overlap.shift %{{.*}} by 1 into %{{.*}} on @tp grid_axes = [0] : memref<8x4xbf16>, memref<8x4xbf16>
// CHECK: overlap.shift %{{.*}} by 4 into %{{.*}} on @tp grid_axes = [0] : memref<8x4xbf16>, memref<8x4xbf16>
func.func @forms(%t: tensor<8x4xf32>, %d: tensor<8x4xf32>, %m: memref<8x4xbf16>, %n: memref<8x4xbf16>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %a = overlap.shift %t by 3 on @tp grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32>
  %b = overlap.shift %t by -1 into %d on @tp grid_axes = [0] : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  overlap.shift %m by 1 into %n on @tp grid_axes = [0] : memref<8x4xbf16>, memref<8x4xbf16>
  // A multiple of the group size is a copy: in place is allowed.
  overlap.shift %m by 4 into %m on @tp grid_axes = [0] : memref<8x4xbf16>, memref<8x4xbf16>
  return %a, %b : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

shard.grid @tp(shape = 4)
func.func @f(%t: tensor<8x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{output 'tensor<4x4xf32>' must have the input's shape and element type ('tensor<8x4xf32>')}}
  %a = overlap.shift %t by 1 on @tp grid_axes = [0] : tensor<8x4xf32> -> tensor<4x4xf32>
  return %a : tensor<4x4xf32>
}

// -----

shard.grid @tp(shape = 4)
func.func @f(%m: memref<8x4xf32>) {
  // expected-error @+1 {{destination is the input; a shift by 1 sends the input to another rank while it receives, so they must be distinct buffers}}
  overlap.shift %m by 1 into %m on @tp grid_axes = [0] : memref<8x4xf32>, memref<8x4xf32>
  return
}

// -----

shard.grid @tp(shape = 4)
func.func @f(%m: memref<8x4xf32>) {
  // expected-error @+1 {{on a memref needs an 'into' destination memref}}
  overlap.shift %m by 1 on @tp grid_axes = [0] : memref<8x4xf32>
  return
}

// -----

func.func @f(%t: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{grid @nogrid does not name a symbol in scope; expected a 'shard.grid'}}
  %a = overlap.shift %t by 1 on @nogrid grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32>
  return %a : tensor<8x4xf32>
}

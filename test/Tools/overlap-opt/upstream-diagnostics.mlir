// RUN: overlap-opt %s -split-input-file -verify-diagnostics

// A module with a shard.grid goes through overlap-opt's input check
// (upstream-crashes.mlir) and then MlirOptMain: positive extents verify,
// upstream's diagnostics still come and -verify-diagnostics sees them.

shard.grid @k(shape = 2x2)

func.func @bad_axis(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{0-based grid axis index 2 is out of bounds}}
  %0 = shard.all_to_all %x on @k grid_axes = [2] split_axis = 0 concat_axis = 1
    : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

shard.grid @k(shape = 2x2)

// expected-error @+1 {{expected ':'}}
func.func @parse_error(%x tensor<4x4xf32>) -> tensor<4x4xf32> {
  return %x : tensor<4x4xf32>
}

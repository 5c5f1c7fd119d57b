// RUN: overlap-opt %s -split-input-file -verify-diagnostics

// One case per verifier error of the all-to-all ops.

shard.grid @ep(shape = 4)
func.func @f(%a: tensor<2x4x8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{operand A must be a rank-2 (tokens x K, one expert per rank) or rank-3 (experts x tokens x K) tensor, got rank 4}}
  %r = overlap.all_to_all_matmul %a, %b, %c on @ep grid_axes = [0]
      : tensor<2x4x8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%a: tensor<8x4x16xf32>, %b: tensor<16x32xf32>, %c: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{operand B must have A's rank 3, got rank 2}}
  %r = overlap.all_to_all_matmul %a, %b, %c on @ep grid_axes = [0]
      : tensor<8x4x16xf32>, tensor<16x32xf32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%a: tensor<8x16xf32>, %b: tensor<12x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{K mismatch: A is 8x16 (K = 16) but B is 12x32 (K = 12)}}
  %r = overlap.all_to_all_matmul %a, %b, %c on @ep grid_axes = [0]
      : tensor<8x16xf32>, tensor<12x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%a: tensor<8x16xf16>, %b: tensor<16x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{operand B has element type 'f32' but A has 'f16'}}
  %r = overlap.matmul_all_to_all %a, %b, %c on @ep grid_axes = [0]
      : tensor<8x16xf16>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%a: tensor<12x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{tokens mismatch: A has 12 but C has 8}}
  %r = overlap.all_to_all_matmul %a, %b, %c on @ep grid_axes = [0]
      : tensor<12x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%a: tensor<10x16xf32>, %b: tensor<16x32xf32>, %c: tensor<10x32xf32>) -> tensor<10x32xf32> {
  // expected-error @+1 {{token rows of A (10) are not divisible by the group size 4; the all-to-all sends every rank an equal block (pad the token count to a multiple of the group size)}}
  %r = overlap.all_to_all_matmul %a, %b, %c on @ep grid_axes = [0]
      : tensor<10x16xf32>, tensor<16x32xf32>, tensor<10x32xf32> -> tensor<10x32xf32>
  return %r : tensor<10x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%a: tensor<6x4x16xf32>, %b: tensor<2x16x32xf32>, %c: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{A's expert count (dimension 0) is 6, expected the group size x experts per rank = 4 x 2 = 8}}
  %r = overlap.all_to_all_matmul %a, %b, %c on @ep grid_axes = [0]
      : tensor<6x4x16xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%a: tensor<8x4x16xf32>, %b: tensor<2x16x32xf32>, %c: tensor<2x12x32xf32>) -> tensor<2x12x32xf32> {
  // expected-error @+1 {{C's tokens per expert (dimension 1) is 12, expected the group size x A's capacity (dimension 1) = 4 x 4 = 16}}
  %r = overlap.all_to_all_matmul %a, %b, %c on @ep grid_axes = [0]
      : tensor<8x4x16xf32>, tensor<2x16x32xf32>, tensor<2x12x32xf32> -> tensor<2x12x32xf32>
  return %r : tensor<2x12x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%a: tensor<2x16x16xf32>, %b: tensor<3x16x32xf32>, %c: tensor<2x16x32xf32>) -> tensor<8x4x32xf32> {
  // expected-error @+1 {{experts per rank mismatch: A has 2 but B has 3}}
  %r = overlap.matmul_all_to_all %a, %b, %c on @ep grid_axes = [0]
      : tensor<2x16x16xf32>, tensor<3x16x32xf32>, tensor<2x16x32xf32> -> tensor<8x4x32xf32>
  return %r : tensor<8x4x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%a: tensor<2x16x16xf32>, %b: tensor<2x16x32xf32>, %c: tensor<2x16x32xf32>) -> tensor<6x4x32xf32> {
  // expected-error @+1 {{the result's expert count (dimension 0) is 6, expected the group size x experts per rank = 4 x 2 = 8}}
  %r = overlap.matmul_all_to_all %a, %b, %c on @ep grid_axes = [0]
      : tensor<2x16x16xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32> -> tensor<6x4x32xf32>
  return %r : tensor<6x4x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%a: tensor<8x4x16xf32>, %b: tensor<2x16x32xf32>, %c: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{plan tile #0 has 4 rows, not divisible by the (rank, expert) blocks 8}}
  %r = overlap.all_to_all_matmul %a, %b, %c on @ep grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [4, 28], strategy = "mc2", bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<8x4x16xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%a: tensor<8x4x16xf32>, %b: tensor<2x16x32xf32>, %c: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{plan tiles [16, 8] sum to 24 rows, expected M = 32}}
  %r = overlap.all_to_all_matmul %a, %b, %c on @ep grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [16, 8], strategy = "mc2", bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<8x4x16xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32> -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%t: tensor<6x32xf32>) -> tensor<6x32xf32> {
  // expected-error @+1 {{input rows (6) are not divisible by the group size 4}}
  %r = overlap.all_to_all %t on @ep grid_axes = [0] : tensor<6x32xf32> -> tensor<6x32xf32>
  return %r : tensor<6x32xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%t: tensor<8x32xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{output 'tensor<4x64xf32>' must have the input's shape and element type ('tensor<8x32xf32>')}}
  %r = overlap.all_to_all %t on @ep grid_axes = [0] : tensor<8x32xf32> -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%m: memref<8x32xf32>) {
  // expected-error @+1 {{on a memref needs an 'into' destination memref}}
  overlap.all_to_all %m on @ep grid_axes = [0] : memref<8x32xf32>
  return
}

// -----

shard.grid @ep(shape = 4)
func.func @f(%m: memref<8x32xf32>) {
  // expected-error @+1 {{destination is the input}}
  overlap.all_to_all %m into %m on @ep grid_axes = [0] : memref<8x32xf32>, memref<8x32xf32>
  return
}

// -----

func.func @f(%m: memref<8x32xf32>, %n: memref<8x32xf32>) {
  // expected-error @+1 {{grid @nope does not name a symbol in scope}}
  overlap.all_to_all %m into %n on @nope grid_axes = [0] : memref<8x32xf32>, memref<8x32xf32>
  return
}

// RUN: overlap-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect

// One case per verifier error of the overlap dialect.

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<4x8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{operand A must be a rank-2 tensor, got rank 3}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] 
      : tensor<4x8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<8x16xf32>, %b: tensor<12x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{K mismatch: A is 8x16 (K = 16) but B is 12x32 (K = 12)}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] 
      : tensor<8x16xf32>, tensor<12x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x24xf32>) -> tensor<8x24xf32> {
  // expected-error @+1 {{N mismatch: B is 16x32 (N = 32) but C is 8x24 (N = 24)}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] 
      : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x24xf32> -> tensor<8x24xf32>
  return %r : tensor<8x24xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x24xf32> {
  // expected-error @+1 {{N mismatch: B is 16x32 (N = 32) but result is 8x24 (N = 24)}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] 
      : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x24xf32>
  return %r : tensor<8x24xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<16x32xf32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{M mismatch: A has 8 rows but C has 16}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] 
      : tensor<8x16xf32>, tensor<16x32xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x32xf32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{result has 16 rows but C has 8; they must be the same}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] 
      : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<8x16xf64>, %b: tensor<16x32xf64>, %c: tensor<8x32xf64>) -> tensor<8x32xf64> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float values}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] 
      : tensor<8x16xf64>, tensor<16x32xf64>, tensor<8x32xf64> -> tensor<8x32xf64>
  return %r : tensor<8x32xf64>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<8x16xf16>, %b: tensor<16x32xbf16>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{operand B has element type 'bf16' but A has 'f16'; A and B must share an element type}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] 
      : tensor<8x16xf16>, tensor<16x32xbf16>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x32xf16>) -> tensor<8x32xf16> {
  // expected-error @+1 {{accumulator C has element type 'f16'; expected the factors' type 'f32' or f32}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] 
      : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf16> -> tensor<8x32xf16>
  return %r : tensor<8x32xf16>
}

// -----

// An all-gather's result is never rounded: C's type.
shard.grid @tp(shape = 8)
func.func @f(%a: tensor<1x16xbf16>, %b: tensor<16x32xbf16>, %c: tensor<8x32xf32>) -> tensor<8x32xbf16> {
  // expected-error @+1 {{result has element type 'bf16' but the accumulator C has 'f32'; they must be the same}}
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      : tensor<1x16xbf16>, tensor<16x32xbf16>, tensor<8x32xf32> -> tensor<8x32xbf16>
  return %r : tensor<8x32xbf16>
}

// -----

// An all-reduce's result may be an f32 C rounded to f16/bf16, not widened.
shard.grid @tp(shape = 8)
func.func @f(%a: tensor<8x16xbf16>, %b: tensor<16x32xbf16>, %c: tensor<8x32xbf16>) -> tensor<8x32xf32> {
  // expected-error @+1 {{result has element type 'f32' but the accumulator C has 'bf16'; they must be the same, or C f32 and the result f16 or bf16 (rounded before the collective)}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<8x16xbf16>, tensor<16x32xbf16>, tensor<8x32xbf16> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{grid @tp does not name a symbol in scope; expected a 'shard.grid'}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] 
      : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func private @tp()
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{grid @tp names a 'func.func', expected a 'shard.grid'}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] 
      : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{grid axis 1 is out of range for grid @tp of rank 1 (valid: 0..0)}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [1] 
      : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{grid axis -1 is out of range for grid @tp of rank 1 (valid: 0..0)}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [-1] 
      : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

shard.grid @tp(shape = 2x4)
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{grid axis 0 is repeated in grid_axes}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0, 0] 
      : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<12x16xf32>, %b: tensor<16x32xf32>, %c: tensor<12x32xf32>) -> tensor<1x32xf32> {
  // expected-error @+1 {{rows of A (M = 12) are not divisible by the group size 8 of the reduce-scatter}}
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0] 
      : tensor<12x16xf32>, tensor<16x32xf32>, tensor<12x32xf32> -> tensor<1x32xf32>
  return %r : tensor<1x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<16x16xf32>, %b: tensor<16x32xf32>, %c: tensor<16x32xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{result has 4 rows, expected M / group size = 16 / 8 = 2}}
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0] 
      : tensor<16x16xf32>, tensor<16x32xf32>, tensor<16x32xf32> -> tensor<4x32xf32>
  return %r : tensor<4x32xf32>
}

// -----

shard.grid @tp(shape = 2x4)
func.func @f(%a: tensor<16x16xf32>, %b: tensor<16x32xf32>, %c: tensor<16x32xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{result has 2 rows, expected M / group size = 16 / 4 = 4}}
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [1] 
      : tensor<16x16xf32>, tensor<16x32xf32>, tensor<16x32xf32> -> tensor<2x32xf32>
  return %r : tensor<2x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{C has 8 rows, expected local rows of A x group size = 2 x 8 = 16}}
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0] 
      : tensor<2x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<256x16xf32>, %b: tensor<16x32xf32>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  // expected-error @+1 {{plan tiles [128, 64] sum to 192 rows, expected M = 256}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] {overlap.plan = #overlap.plan<tiles = [128, 64], strategy = "uniform:2", bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<256x16xf32>, tensor<16x32xf32>, tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<256x16xf32>, %b: tensor<16x32xf32>, %c: tensor<256x32xf32>) -> tensor<32x32xf32> {
  // expected-error @+1 {{plan tile #1 has 124 rows, not divisible by the group size 8 (each tile takes an equal share of every rank's block)}}
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0] {overlap.plan = #overlap.plan<tiles = [128, 124, 4], strategy = "uniform:2", bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<256x16xf32>, tensor<16x32xf32>, tensor<256x32xf32> -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%a: tensor<32x16xf32>, %b: tensor<16x32xf32>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  // expected-error @+1 {{plan tiles [128] sum to 128 rows, expected M = 256}}
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0] {overlap.plan = #overlap.plan<tiles = [128], strategy = "uniform:2", bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<32x16xf32>, tensor<16x32xf32>, tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

// -----

func.func @f() {
  // expected-error @+1 {{#overlap.plan tile #1 has 0 rows; every tile must be positive}}
  "test.op"() {overlap.plan = #overlap.plan<tiles = [128, 0], strategy = "x", bound = comm, predicted_us = 1.0, serial_us = 2.0>} : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{#overlap.plan tiles sum past 2^63 - 1 rows at tile #1}}
  "test.op"() {overlap.plan = #overlap.plan<tiles = [9223372036854775807, 1], strategy = "x", bound = comm, predicted_us = 1.0, serial_us = 2.0>} : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{#overlap.plan needs at least one tile}}
  "test.op"() {overlap.plan = #overlap.plan<tiles = [], strategy = "x", bound = comm, predicted_us = 1.0, serial_us = 2.0>} : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{#overlap.plan predicted_us must be a finite, non-negative time, got -1}}
  "test.op"() {overlap.plan = #overlap.plan<tiles = [1], strategy = "x", bound = comm, predicted_us = -1.0, serial_us = 2.0>} : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{#overlap.plan needs a non-empty strategy}}
  "test.op"() {overlap.plan = #overlap.plan<tiles = [1], strategy = "", bound = comm, predicted_us = 1.0, serial_us = 2.0>} : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{expected bound 'compute' or 'comm', got 'memory'}}
  "test.op"() {overlap.plan = #overlap.plan<tiles = [1], strategy = "x", bound = memory, predicted_us = 1.0, serial_us = 2.0>} : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'overlap.plan' is only meaningful on a fused matmul op (overlap.matmul_all_reduce, overlap.matmul_reduce_scatter, overlap.all_gather_matmul, overlap.all_to_all_matmul, overlap.matmul_all_to_all)}}
  "test.op"() {overlap.plan = #overlap.plan<tiles = [1], strategy = "x", bound = comm, predicted_us = 1.0, serial_us = 2.0>} : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'overlap.plan' must be an #overlap.plan attribute, got [1, 2]}}
  "test.op"() {overlap.plan = [1, 2]} : () -> ()
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{unknown overlap dialect attribute 'overlap.tiles'}}
  "test.op"() {overlap.tiles = [1, 2]} : () -> ()
  return
}

// -----

func.func @f(%a0: tensor<10x100xf32>, %a1: tensor<50x5xf32>) -> tensor<10x5xf32> {
  // expected-error @+1 {{inner dimensions do not match: factor #0 is 10x100 but factor #1 is 50x5 (expected 100 rows)}}
  %p = overlap.chain_matmul %a0, %a1 : tensor<10x100xf32>, tensor<50x5xf32> -> tensor<10x5xf32>
  return %p : tensor<10x5xf32>
}

// -----

func.func @f(%a0: tensor<10x100xf32>) -> tensor<10x100xf32> {
  // expected-error @+1 {{needs at least 2 factors, got 1}}
  %p = overlap.chain_matmul %a0 : tensor<10x100xf32> -> tensor<10x100xf32>
  return %p : tensor<10x100xf32>
}

// -----

func.func @f(%a0: tensor<10x100xf32>, %a1: tensor<100x5xf32>) -> tensor<10x6xf32> {
  // expected-error @+1 {{result is 10x6, expected 10x5 (rows of the first factor x columns of the last)}}
  %p = overlap.chain_matmul %a0, %a1 : tensor<10x100xf32>, tensor<100x5xf32> -> tensor<10x6xf32>
  return %p : tensor<10x6xf32>
}

// -----

func.func @f(%a0: tensor<10x100xf32>, %a1: tensor<100x5xf16>) -> tensor<10x5xf32> {
  // expected-error @+1 {{factor #1 has element type 'f16' but factor #0 has 'f32'; all factors must share one}}
  %p = overlap.chain_matmul %a0, %a1 : tensor<10x100xf32>, tensor<100x5xf16> -> tensor<10x5xf32>
  return %p : tensor<10x5xf32>
}

// -----

func.func @f(%a0: tensor<10x100xf32>, %a1: tensor<100x5x2xf32>) -> tensor<10x5xf32> {
  // expected-error @+1 {{factor #1 must be a rank-2 tensor, got rank 3}}
  %p = overlap.chain_matmul %a0, %a1 : tensor<10x100xf32>, tensor<100x5x2xf32> -> tensor<10x5xf32>
  return %p : tensor<10x5xf32>
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%t: tensor<8x4xf32>) {
  // expected-error @+1 {{on a tensor must return a tensor result}}
  overlap.all_reduce %t on @tp grid_axes = [0] : tensor<8x4xf32>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%m: memref<8x4xf32>) {
  // expected-error @+1 {{on a memref works in place and returns no result, got 'tensor<8x4xf32>'}}
  %r = overlap.all_reduce %m on @tp grid_axes = [0] : memref<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%t: tensor<8x4xf32>) {
  // expected-error @+1 {{result type 'tensor<8x4xf16>' differs from the input type 'tensor<8x4xf32>'}}
  %r = overlap.all_reduce %t on @tp grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf16>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%m: memref<8x4xf32>) {
  // expected-error @+1 {{grid axis 2 is out of range for grid @tp of rank 1 (valid: 0..0)}}
  overlap.all_reduce %m on @tp grid_axes = [2] : memref<8x4xf32>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%m: memref<8x4xf32>) {
  // expected-error @+1 {{on a memref needs an 'into' destination memref}}
  overlap.reduce_scatter %m on @tp grid_axes = [0] : memref<8x4xf32>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%t: tensor<8x4xf32>, %m: memref<1x4xf32>) {
  // expected-error @+1 {{on a tensor with an 'into' destination returns the destination's type 'memref<1x4xf32>', got 'tensor<1x4xf32>'}}
  %r = overlap.reduce_scatter %t into %m on @tp grid_axes = [0] : tensor<8x4xf32>, memref<1x4xf32> -> tensor<1x4xf32>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%m: memref<8x4xf32>, %t: tensor<1x4xf32>) {
  // expected-error @+1 {{on a memref needs a memref destination, got 'tensor<1x4xf32>'}}
  overlap.all_gather %m into %t on @tp grid_axes = [0] : memref<8x4xf32>, tensor<1x4xf32>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%t: tensor<12x4xf32>) {
  // expected-error @+1 {{input rows (12) are not divisible by the group size 8}}
  %r = overlap.reduce_scatter %t on @tp grid_axes = [0] : tensor<12x4xf32> -> tensor<1x4xf32>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%t: tensor<16x4xf32>) {
  // expected-error @+1 {{output has 4 rows, expected 2 (16 / 8 ranks)}}
  %r = overlap.reduce_scatter %t on @tp grid_axes = [0] : tensor<16x4xf32> -> tensor<4x4xf32>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%s: memref<16x4xf32>, %d: memref<2x5xf32>) {
  // expected-error @+1 {{dimension 1 of the output is 5, expected the input's 4}}
  overlap.reduce_scatter %s into %d on @tp grid_axes = [0] : memref<16x4xf32>, memref<2x5xf32>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%s: memref<16x4xf32>, %d: memref<2x4xf16>) {
  // expected-error @+1 {{destination element type 'f16' differs from the input's 'f32'}}
  overlap.reduce_scatter %s into %d on @tp grid_axes = [0] : memref<16x4xf32>, memref<2x4xf16>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%t: tensor<2x4xf32>) {
  // expected-error @+1 {{output has 8 rows, expected 16 (2 x 8 ranks)}}
  %r = overlap.all_gather %t on @tp grid_axes = [0] : tensor<2x4xf32> -> tensor<8x4xf32>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%s: memref<2x4xf32>, %d: memref<16x4x1xf32>) {
  // expected-error @+1 {{input 'memref<2x4xf32>' and output 'memref<16x4x1xf32>' must have the same rank (at least 1)}}
  overlap.all_gather %s into %d on @tp grid_axes = [0] : memref<2x4xf32>, memref<16x4x1xf32>
  return
}

// -----

shard.grid @tp(shape = 8)
func.func @f(%t: tensor<2x4xf32>) {
  // expected-error @+1 {{output element type 'bf16' differs from the input's 'f32'}}
  %r = overlap.all_gather %t on @tp grid_axes = [0] : tensor<2x4xf32> -> tensor<16x4xbf16>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{!overlap.signals needs at least one flag, got 0}}
  %s = overlap.signals : !overlap.signals<0>
  return
}

// -----

func.func @f() {
  %s = overlap.signals : !overlap.signals<2>
  overlap.concurrent {
    overlap.stream compute {
      // expected-error @+1 {{flag index 2 is out of range for '!overlap.signals<2>' (valid: 0..1)}}
      overlap.signal %s[2] : !overlap.signals<2>
    }
  }
  return
}

// -----

func.func @f() {
  %s = overlap.signals : !overlap.signals<2>
  overlap.concurrent {
    overlap.stream compute {
      overlap.signal %s[0] : !overlap.signals<2>
    }
    overlap.stream comm {
      // expected-error @+1 {{waits on flag 1 but no other stream of the enclosing 'overlap.concurrent' signals that flag; the wait would never be released}}
      overlap.wait %s[1] : !overlap.signals<2>
    }
  }
  return
}

// -----

func.func @f() {
  %s = overlap.signals : !overlap.signals<1>
  overlap.concurrent {
    overlap.stream compute {
      overlap.signal %s[0] : !overlap.signals<1>
      // expected-error @+1 {{waits on flag 0 but no other stream of the enclosing 'overlap.concurrent' signals that flag; the wait would never be released}}
      overlap.wait %s[0] : !overlap.signals<1>
    }
  }
  return
}

// -----

func.func @f() {
  %s = overlap.signals : !overlap.signals<1>
  %t = overlap.signals : !overlap.signals<1>
  overlap.concurrent {
    overlap.stream compute {
      overlap.signal %t[0] : !overlap.signals<1>
    }
    overlap.stream comm {
      // expected-error @+1 {{waits on flag 0 but no other stream of the enclosing 'overlap.concurrent' signals that flag; the wait would never be released}}
      overlap.wait %s[0] : !overlap.signals<1>
    }
  }
  return
}

// -----

func.func @f() {
  %s = overlap.signals : !overlap.signals<1>
  // expected-error @+1 {{must be inside an 'overlap.stream'}}
  overlap.signal %s[0] : !overlap.signals<1>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{expects parent op 'overlap.concurrent'}}
  overlap.stream compute {
  }
  return
}

// -----

func.func @f() {
  overlap.concurrent {
    // expected-error @+1 {{is not allowed directly inside 'overlap.concurrent'; only 'overlap.stream' regions may appear there}}
    %c = arith.constant 0 : index
  }
  return
}

// -----

func.func @f() {
  overlap.concurrent {
    overlap.stream compute {
    }
    // expected-error @+1 {{name 'compute' is used by another stream of the same 'overlap.concurrent'}}
    overlap.stream compute {
    }
  }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{needs at least one 'overlap.stream'}}
  overlap.concurrent {
  }
  return
}

// -----

func.func @f() {
  overlap.concurrent {
    // expected-error @+1 {{needs a non-empty name}}
    overlap.stream "" {
    }
  }
  return
}

// -----

func.func @f(%c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  // expected-error @+1 {{slices #0 and #1 overlap; slices must be disjoint}}
  %r = overlap.tiles %c : tensor<256x32xf32>
      (%t0 = [0, 0] [128, 32], %t1 = [64, 0] [128, 32]) {
    overlap.yield %t0, %t1 : tensor<128x32xf32>, tensor<128x32xf32>
  }
  return %r : tensor<256x32xf32>
}

// -----

func.func @f(%c: tensor<256x32xf32>, %x: index) -> tensor<256x32xf32> {
  // A slice with a dynamic offset still gets its sizes checked.
  // expected-error @+1 {{slice #0 has size 512 in dimension 0, outside the destination's [0, 256)}}
  %r = overlap.tiles %c : tensor<256x32xf32>
      (%t0 = [%x, 0] [512, 32]) {
    overlap.yield %t0 : tensor<512x32xf32>
  }
  return %r : tensor<256x32xf32>
}

// -----

func.func @f(%c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  // expected-error @+1 {{slice #1 spans [192, 320) in dimension 0, outside the destination's [0, 256)}}
  %r = overlap.tiles %c : tensor<256x32xf32>
      (%t0 = [0, 0] [128, 32], %t1 = [192, 0] [128, 32]) {
    overlap.yield %t0, %t1 : tensor<128x32xf32>, tensor<128x32xf32>
  }
  return %r : tensor<256x32xf32>
}

// -----

func.func @f(%c: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{destination 'tensor<?x32xf32>' must have a static shape of rank 1 or more}}
  %r = overlap.tiles %c : tensor<?x32xf32> (%t0 = [0, 0] [128, 32]) {
    overlap.yield %t0 : tensor<128x32xf32>
  }
  return %r : tensor<?x32xf32>
}

// -----

func.func @f(%c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  // expected-error @+1 {{expected 2 offsets and 2 sizes (the rank of 'tensor<256x32xf32>'), got 1 and 2}}
  %r = overlap.tiles %c : tensor<256x32xf32> (%t0 = [0] [128, 32]) {
    overlap.yield %t0 : tensor<128x32xf32>
  }
  return %r : tensor<256x32xf32>
}

// -----

func.func @f(%c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  // expected-error @+1 {{body argument #0 has type 'tensor<64x32xf32>', expected 'tensor<128x32xf32>' (the slice's shape)}}
  %r = "overlap.tiles"(%c) ({
  ^bb0(%t0: tensor<64x32xf32>):
    "overlap.yield"(%t0) : (tensor<64x32xf32>) -> ()
  }) {static_offsets = array<i64: 0, 0>, static_sizes = array<i64: 128, 32>}
      : (tensor<256x32xf32>) -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

// -----

func.func @f(%c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  // expected-error @+1 {{has 2 slices but its body takes 1 arguments}}
  %r = "overlap.tiles"(%c) ({
  ^bb0(%t0: tensor<128x32xf32>):
    "overlap.yield"(%t0) : (tensor<128x32xf32>) -> ()
  }) {static_offsets = array<i64: 0, 0, 128, 0>, static_sizes = array<i64: 128, 32, 128, 32>}
      : (tensor<256x32xf32>) -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

// -----

func.func @f(%c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %r = overlap.tiles %c : tensor<256x32xf32>
      (%t0 = [0, 0] [128, 32], %t1 = [128, 0] [128, 32]) {
    // expected-error @+1 {{yields 1 values for 2 slices}}
    overlap.yield %t0 : tensor<128x32xf32>
  }
  return %r : tensor<256x32xf32>
}

// -----

func.func @f(%c: tensor<256x32xf32>, %x: tensor<128x16xf32>) -> tensor<256x32xf32> {
  %r = overlap.tiles %c : tensor<256x32xf32> (%t0 = [0, 0] [128, 32]) {
    // expected-error @+1 {{value #0 has type 'tensor<128x16xf32>', expected the slice's 'tensor<128x32xf32>'}}
    overlap.yield %x : tensor<128x16xf32>
  }
  return %r : tensor<256x32xf32>
}

// -----

func.func @f(%x: tensor<128x16xf32>) {
  // expected-error @+1 {{expects parent op 'overlap.tiles'}}
  overlap.yield %x : tensor<128x16xf32>
}

// RUN: overlap-opt %s --overlap-check-collectives -split-input-file -verify-diagnostics
// RUN: not overlap-opt %s --overlap-pipeline --remarks-filter=overlap -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPELINE

// Every shard op on tensors that overlap-lower-collectives leaves for
// bufferization is an error that says why (bufferization alone would only
// say "op was not bufferized"). Collectives it lowers pass through
// overlap-pipeline with a remark and no error (lower-collectives.mlir).

shard.grid @tp(shape = 2)
func.func @float8(%x: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{'shard.all_reduce' op is not lowered by Overlap: its element type f8E4M3FN is not one the runtime's collectives take (f32, f16, bf16, f64, i8, i16, i32, i64; i1 when both the input and the result are i1)}}
  %r = shard.all_reduce %x on @tp grid_axes = [0] : tensor<4xf8E4M3FN> -> tensor<4xf8E4M3FN>
  return %r : tensor<4xf8E4M3FN>
}
// Through overlap-pipeline: the same error.
// PIPELINE: error: 'shard.all_reduce' op is not lowered by Overlap: its element type f8E4M3FN is not one the runtime's collectives take

// -----

shard.grid @tp(shape = 2)
func.func @bitwise(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{is not lowered by Overlap: the reduction 'bitwise_or' is not one the runtime has (sum, max, min, product, average)}}
  %r = shard.all_reduce %x on @tp grid_axes = [0] reduction = bitwise_or : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}
// PIPELINE: error: 'shard.all_reduce' op is not lowered by Overlap: the reduction 'bitwise_or'

// -----

shard.grid @tp(shape = 2)
func.func @annotation(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %s = shard.sharding @tp split_axes = [[0]] : !shard.sharding
  // expected-error @+1 {{'shard.shard' op is a sharding annotation, which Overlap does not lower; partition the program first (sharding-propagation, shard-partition)}}
  %r = shard.shard %x to %s : tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

// -----

shard.grid @tp(shape = 2)
func.func @recv(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'shard.recv' op is not lowered by Overlap: no shard.send before it in the function on the same grid axes and tensor type pairs with it (the k-th send pairs with the k-th recv): a recv that nothing is sent to would wait forever}}
  %r = shard.recv %x on @tp grid_axes = [0] source = [1] : (tensor<64x32xf32>) -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}
// PIPELINE: error: 'shard.recv' op is not lowered by Overlap: no shard.send before it

// -----

shard.grid @tp(shape = 2)
func.func @broadcast_not_expanded(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'shard.broadcast' op is not lowered by Overlap: it is written with other collectives by overlap-expand-collectives, which did not run before}}
  %r = shard.broadcast %x on @tp grid_axes = [0] root = [0] : (tensor<64x32xf32>) -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

// -----

// A collective that overlap-lower-collectives would lower, when it did not
// run.
shard.grid @tp(shape = 2)
func.func @not_lowered_yet(%x: tensor<256x32xf32>) -> tensor<256x32xf32> {
  // expected-error @+1 {{'shard.all_reduce' op is not lowered by Overlap: it would be; run overlap-lower-collectives (or overlap-pipeline) first}}
  %r = shard.all_reduce %x on @tp grid_axes = [0] reduction = max : tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}
// Through overlap-pipeline it is lowered, with both remarks and no error.
// PIPELINE-NOT: error: 'shard.all_reduce' op {{.*}} it would be
// PIPELINE: remark: [Missed] not-overlapped | Category:overlap:overlap-lower-collectives | Function=not_lowered_yet | Reason="lowered as one unsplit all-reduce, not overlapped: its operand is not the result of a linalg.matmul
// PIPELINE-NOT: error: 'shard.all_reduce' op {{.*}} it would be

// -----

// Ops that Overlap lowers, or that carry no tensor, pass.
shard.grid @tp(shape = 2)
func.func @fine(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> (tensor<256x32xf32>, index) {
  %i = shard.process_linear_index on @tp : index
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<256x64xf32>, tensor<64x32xf32>, tensor<256x32xf32> -> tensor<256x32xf32>
  return %r, %i : tensor<256x32xf32>, index
}

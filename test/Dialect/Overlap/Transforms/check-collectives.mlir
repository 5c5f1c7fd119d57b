// RUN: overlap-opt %s --overlap-check-collectives -split-input-file -verify-diagnostics
// RUN: not overlap-opt %s --overlap-pipeline --remarks-filter=overlap -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPELINE

// Every shard op on tensors left for bufferization is an error that says
// why overlap-raise did not fuse it (bufferization alone would only say
// "op was not bufferized").

shard.grid @tp(shape = 2)
func.func @max(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %m = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  // expected-error @+1 {{'shard.all_reduce' op is not lowered by Overlap, which lowers a collective only fused with a matmul, and overlap-raise did not fuse it: the reduction is 'max'; only a sum distributes over the tiles of C + A*B}}
  %r = shard.all_reduce %m on @tp grid_axes = [0] reduction = max : tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}
// Through overlap-pipeline: overlap-raise's remark, then the error.
// PIPELINE: remark: [Missed] not-raised | {{.*}}Reason="not raised to a fused overlap op: the reduction is 'max'
// PIPELINE: error: 'shard.all_reduce' op is not lowered by Overlap, which lowers a collective only fused with a matmul, and overlap-raise did not fuse it: the reduction is 'max'

// -----

shard.grid @tp(shape = 2)
func.func @no_matmul(%x: tensor<256x32xf32>) -> tensor<256x32xf32> {
  // expected-error @+1 {{overlap-raise did not fuse it: its operand is not the result of a linalg.matmul (a collective is fused with the matmul that produces it)}}
  %r = shard.all_reduce %x on @tp grid_axes = [0] : tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}
// PIPELINE: error: 'shard.all_reduce' op {{.*}}: its operand is not the result of a linalg.matmul

// -----

shard.grid @tp(shape = 2)
func.func @shared_product(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> (tensor<128x32xf32>, tensor<256x32xf32>) {
  %m = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  // expected-error @+1 {{overlap-raise did not fuse it: the unreduced matmul result has other users, which would need it before the reduce-scatter}}
  %r = shard.reduce_scatter %m on @tp grid_axes = [0] scatter_axis = 0 : tensor<256x32xf32> -> tensor<128x32xf32>
  return %r, %m : tensor<128x32xf32>, tensor<256x32xf32>
}

// -----

shard.grid @tp(shape = 2)
func.func @gather_rhs(%x: tensor<32x16xf32>, %w: tensor<64x64xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  // expected-error @+1 {{overlap-raise did not fuse it: its result is not the left operand of a linalg.matmul on tensors (an all-gather is fused with the matmul that consumes it)}}
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<32x16xf32> -> tensor<64x16xf32>
  %y = linalg.matmul ins(%w, %g : tensor<64x64xf32>, tensor<64x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}

// -----

shard.grid @tp(shape = 2)
func.func @gather_axis(%x: tensor<64x32xf32>, %w: tensor<64x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  // expected-error @+1 {{overlap-raise did not fuse it: the all-gather concatenates axis 1; only rows (axis 0) are handled}}
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 1 : tensor<64x32xf32> -> tensor<64x64xf32>
  %y = linalg.matmul ins(%g, %w : tensor<64x64xf32>, tensor<64x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}

// -----

shard.grid @tp(shape = 2)
func.func @all_to_all(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{'shard.all_to_all' op is not lowered by Overlap, which lowers a collective only fused with a matmul, and overlap-raise did not fuse it: it neither consumes the result of the experts' matmul (linalg.matmul or linalg.batch_matmul: combine) nor feeds its tokens to one (dispatch)}}
  %r = shard.all_to_all %x on @tp grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<64x32xf32> -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

// -----

shard.grid @tp(shape = 2)
func.func @annotation(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %s = shard.sharding @tp split_axes = [[0]] : !shard.sharding
  // expected-error @+1 {{'shard.shard' op is a sharding annotation, which Overlap does not lower; partition the program first (sharding-propagation, shard-partition)}}
  %r = shard.shard %x to %s : tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

// -----

// A collective that overlap-raise would fuse, when raise did not run.
shard.grid @tp(shape = 2)
func.func @not_raised_yet(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %m = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  // expected-error @+1 {{overlap-raise did not fuse it: it would; run overlap-raise (or overlap-pipeline) first}}
  %r = shard.all_reduce %m on @tp grid_axes = [0] : tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

// -----

// Ops that Overlap lowers, or that carry no tensor, pass.
shard.grid @tp(shape = 2)
func.func @fine(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> (tensor<256x32xf32>, index) {
  %i = shard.process_linear_index on @tp : index
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<256x64xf32>, tensor<64x32xf32>, tensor<256x32xf32> -> tensor<256x32xf32>
  return %r, %i : tensor<256x32xf32>, index
}

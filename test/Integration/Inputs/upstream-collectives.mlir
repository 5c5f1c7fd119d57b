// Tensor-parallel programs written with upstream sharding annotations, for
// sharding-propagation + shard-partition (../upstream-collectives.mlir):
// the partitioner emits collectives with no matmul beside them, along
// columns, and all_slice.
shard.grid @tp(shape = 4)
// Column-parallel linear whose output is wanted whole: the partitioner
// gathers the columns (all_gather along dim 1, no matmul after it).
func.func @col_gather(%x: tensor<64x32xf32>, %w: tensor<32x128xf32>) -> tensor<64x128xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %sr = shard.sharding @tp split_axes = [[]] : !shard.sharding
  %scol = shard.sharding @tp split_axes = [[], [0]] : !shard.sharding
  %x1 = shard.shard %x to %sr : tensor<64x32xf32>
  %w1 = shard.shard %w to %scol : tensor<32x128xf32>
  %e = tensor.empty() : tensor<64x128xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<64x128xf32>) -> tensor<64x128xf32>
  %h = linalg.matmul ins(%x1, %w1 : tensor<64x32xf32>, tensor<32x128xf32>) outs(%f : tensor<64x128xf32>) -> tensor<64x128xf32>
  %h1 = shard.shard %h to %scol : tensor<64x128xf32>
  %y = shard.shard %h1 to %sr annotate_for_users : tensor<64x128xf32>
  return %y : tensor<64x128xf32>
}
// A linear whose input is split by columns and whose output is kept split
// by columns: the partitioner gathers the input's columns and exchanges
// the weight (all_to_all split 1, concat 0) before the matmul.
func.func @cols_exchange(%x: tensor<64x128xf32>, %w: tensor<128x32xf32>) -> tensor<64x32xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %scolx = shard.sharding @tp split_axes = [[], [0]] : !shard.sharding
  %srow = shard.sharding @tp split_axes = [[0]] : !shard.sharding
  %sout = shard.sharding @tp split_axes = [[], [0]] : !shard.sharding
  %x1 = shard.shard %x to %scolx : tensor<64x128xf32>
  %w1 = shard.shard %w to %srow : tensor<128x32xf32>
  %e = tensor.empty() : tensor<64x32xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<64x32xf32>) -> tensor<64x32xf32>
  %h = linalg.matmul ins(%x1, %w1 : tensor<64x128xf32>, tensor<128x32xf32>) outs(%f : tensor<64x32xf32>) -> tensor<64x32xf32>
  %y = shard.shard %h to %sout : tensor<64x32xf32>
  return %y : tensor<64x32xf32>
}
// A replicated input used split by rows, then gathered again: all_slice,
// an elementwise op, an all_gather with no matmul.
func.func @slice_in(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %sr = shard.sharding @tp split_axes = [[]] : !shard.sharding
  %srow = shard.sharding @tp split_axes = [[0]] : !shard.sharding
  %x1 = shard.shard %x to %sr : tensor<64x32xf32>
  %x2 = shard.shard %x1 to %srow annotate_for_users : tensor<64x32xf32>
  %e = tensor.empty() : tensor<64x32xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x2 : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.negf %in : f32
      linalg.yield %m : f32
  } -> tensor<64x32xf32>
  %y = shard.shard %n to %srow : tensor<64x32xf32>
  %y2 = shard.shard %y to %sr annotate_for_users : tensor<64x32xf32>
  return %y2 : tensor<64x32xf32>
}
// The Megatron MLP: column- then row-parallel, the all_reduce after the
// second matmul (raised and overlapped; with target=cuda this program hit
// the host bookkeeping buffers of upstream's deallocation lowering).
func.func @mlp(%x: tensor<256x64xf32>, %wa: tensor<64x128xf32>, %wb: tensor<128x64xf32>) -> tensor<256x64xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %sr = shard.sharding @tp split_axes = [[]] : !shard.sharding
  %scol = shard.sharding @tp split_axes = [[], [0]] : !shard.sharding
  %srow = shard.sharding @tp split_axes = [[0]] : !shard.sharding
  %y_in = shard.shard %x to %sr : tensor<256x64xf32>
  %a = shard.shard %wa to %scol : tensor<64x128xf32>
  %e = tensor.empty() : tensor<256x128xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<256x128xf32>) -> tensor<256x128xf32>
  %h = linalg.matmul ins(%y_in, %a : tensor<256x64xf32>, tensor<64x128xf32>) outs(%f : tensor<256x128xf32>) -> tensor<256x128xf32>
  %b = shard.shard %wb to %srow : tensor<128x64xf32>
  %g = tensor.empty() : tensor<256x64xf32>
  %z = linalg.fill ins(%cst : f32) outs(%g : tensor<256x64xf32>) -> tensor<256x64xf32>
  %o = linalg.matmul ins(%h, %b : tensor<256x128xf32>, tensor<128x64xf32>) outs(%z : tensor<256x64xf32>) -> tensor<256x64xf32>
  %y = shard.shard %o to %sr : tensor<256x64xf32>
  return %y : tensor<256x64xf32>
}

// matmul + reduce-scatter on a grid of one rank, for overlap-exec's CUDA
// tests: a pure matmul + collective program, which --target=cuda compiles,
// and one rank, which --backend cuda runs (one rank per process).
shard.grid @tp(shape = 1)

func.func @mrs(%a: tensor<512x128xf32>, %b: tensor<128x128xf32>, %c: tensor<512x128xf32>) -> tensor<512x128xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<512x128xf32>, tensor<128x128xf32>, tensor<512x128xf32> -> tensor<512x128xf32>
  return %r : tensor<512x128xf32>
}

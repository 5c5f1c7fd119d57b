// matmul + all-reduce for overlap-exec's tests. The grid size is the rank
// count, so this file is a template: @R@ becomes the number of ranks.
shard.grid @tp(shape = @R@)

func.func @mar(%a: tensor<512x128xf32>, %b: tensor<128x128xf32>, %c: tensor<512x128xf32>) -> tensor<512x128xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<512x128xf32>, tensor<128x128xf32>, tensor<512x128xf32> -> tensor<512x128xf32>
  return %r : tensor<512x128xf32>
}

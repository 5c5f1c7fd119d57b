shard.grid @tp(shape = 4)

func.func @mar(%a: tensor<512x128xf32>, %b: tensor<128x128xf32>, %c: tensor<512x128xf32>) -> tensor<512x128xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<512x128xf32>, tensor<128x128xf32>, tensor<512x128xf32> -> tensor<512x128xf32>
  return %r : tensor<512x128xf32>
}

func.func @mrs(%a: tensor<512x128xf32>, %b: tensor<128x128xf32>, %c: tensor<512x128xf32>) -> tensor<128x128xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<512x128xf32>, tensor<128x128xf32>, tensor<512x128xf32> -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}

func.func @agm(%a: tensor<128x128xf32>, %b: tensor<128x128xf32>, %c: tensor<512x128xf32>) -> tensor<512x128xf32> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      : tensor<128x128xf32>, tensor<128x128xf32>, tensor<512x128xf32> -> tensor<512x128xf32>
  return %r : tensor<512x128xf32>
}

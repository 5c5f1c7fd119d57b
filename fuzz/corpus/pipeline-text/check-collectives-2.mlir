shard.grid @tp(shape = 2)
func.func @shared_product(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> (tensor<128x32xf32>, tensor<256x32xf32>) {
  %m = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %r = shard.reduce_scatter %m on @tp grid_axes = [0] scatter_axis = 0 : tensor<256x32xf32> -> tensor<128x32xf32>
  return %r, %m : tensor<128x32xf32>, tensor<256x32xf32>
}

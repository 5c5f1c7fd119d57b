shard.grid @tp(shape = 2)
func.func @max(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %m = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %r = shard.all_reduce %m on @tp grid_axes = [0] reduction = max : tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

shard.grid @tp(shape = 2)
func.func @gather_axis(%x: tensor<64x32xf32>, %w: tensor<64x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 1 : tensor<64x32xf32> -> tensor<64x64xf32>
  %y = linalg.matmul ins(%g, %w : tensor<64x64xf32>, tensor<64x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}

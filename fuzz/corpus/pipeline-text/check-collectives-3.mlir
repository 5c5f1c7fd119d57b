shard.grid @tp(shape = 2)
func.func @gather_rhs(%x: tensor<32x16xf32>, %w: tensor<64x64xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<32x16xf32> -> tensor<64x16xf32>
  %y = linalg.matmul ins(%w, %g : tensor<64x64xf32>, tensor<64x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}

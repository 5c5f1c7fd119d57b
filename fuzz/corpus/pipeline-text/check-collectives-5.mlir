shard.grid @tp(shape = 2)
func.func @all_to_all(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %r = shard.all_to_all %x on @tp grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<64x32xf32> -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

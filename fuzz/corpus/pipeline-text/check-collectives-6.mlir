shard.grid @tp(shape = 2)
func.func @annotation(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %s = shard.sharding @tp split_axes = [[0]] : !shard.sharding
  %r = shard.shard %x to %s : tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

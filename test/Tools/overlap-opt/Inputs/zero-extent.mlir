// A grid with an extent 0 under an all_to_all: upstream's verifier divides
// by the group size (SIGFPE).
shard.grid @g(shape = 2x0)
func.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = shard.all_to_all %x on @g grid_axes = [1] split_axis = 0 concat_axis = 1
    : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

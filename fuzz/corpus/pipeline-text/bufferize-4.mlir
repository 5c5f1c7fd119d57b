shard.grid @tp(shape = 2)

func.func @tiles_read_after(%c: tensor<256x32xf32>) -> (tensor<256x32xf32>, tensor<256x32xf32>) {
  %r = overlap.tiles %c : tensor<256x32xf32> (%t0 = [0, 0] [128, 32]) {
    %a = overlap.all_reduce %t0 on @tp grid_axes = [0] : tensor<128x32xf32> -> tensor<128x32xf32>
    overlap.yield %a : tensor<128x32xf32>
  }
  return %r, %c : tensor<256x32xf32>, tensor<256x32xf32>
}

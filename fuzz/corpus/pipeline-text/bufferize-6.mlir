shard.grid @tp(shape = 4)

func.func @undecomposed(%a: tensor<128x64xf32>, %b: tensor<64x32xf32>,
                        %c: tensor<128x32xf32>) -> tensor<128x32xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<128x64xf32>, tensor<64x32xf32>, tensor<128x32xf32> -> tensor<128x32xf32>
  return %r : tensor<128x32xf32>
}

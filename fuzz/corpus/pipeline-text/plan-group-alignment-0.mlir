shard.grid @tp3(shape = 3)

func.func @three_ranks(%a: tensor<3000x256xf16>, %b: tensor<256x256xf16>,
                       %c: tensor<3000x256xf16>) -> tensor<1000x256xf16> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp3 grid_axes = [0]
      : tensor<3000x256xf16>, tensor<256x256xf16>, tensor<3000x256xf16>
      -> tensor<1000x256xf16>
  return %r : tensor<1000x256xf16>
}

shard.grid @tp(shape = 8)

func.func @mc2_example(%a: tensor<4096x3072xf16>, %b: tensor<3072x8192xf16>,
                       %c: tensor<4096x8192xf16>) -> tensor<4096x8192xf16> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16>
      -> tensor<4096x8192xf16>
  return %r : tensor<4096x8192xf16>
}

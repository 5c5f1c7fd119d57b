shard.grid @tp(shape = 8)

func.func @dynamic_c(%a: tensor<4096x3072xf16>, %b: tensor<3072x8192xf16>,
                     %c: tensor<?x8192xf16>) -> tensor<512x8192xf16> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<?x8192xf16>
      -> tensor<512x8192xf16>
  return %r : tensor<512x8192xf16>
}

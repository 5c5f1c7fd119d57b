shard.grid @dyn(shape = ?)

func.func @dynamic_group(%a: tensor<4096x3072xf16>, %b: tensor<3072x8192xf16>,
                         %c: tensor<4096x8192xf16>) -> tensor<4096x8192xf16> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @dyn grid_axes = [0]
      : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16>
      -> tensor<4096x8192xf16>
  return %r : tensor<4096x8192xf16>
}

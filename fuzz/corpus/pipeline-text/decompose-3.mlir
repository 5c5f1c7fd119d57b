shard.grid @tp(shape = 4)

func.func @all_gather(%a: tensor<64x16xbf16>, %b: tensor<16x32xbf16>,
                      %c: tensor<256x32xbf16>) -> tensor<256x32xbf16> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [64, 192], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<64x16xbf16>, tensor<16x32xbf16>, tensor<256x32xbf16> -> tensor<256x32xbf16>
  return %r : tensor<256x32xbf16>
}

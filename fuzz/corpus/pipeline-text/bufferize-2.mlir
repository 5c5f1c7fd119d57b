shard.grid @tp(shape = 2)

func.func @all_gather(%a: tensor<64x8xf32>, %b: tensor<8x16xf32>, %c: tensor<128x16xf32>) -> tensor<128x16xf32> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128], strategy = "none",
                                    bound = compute, predicted_us = 1.0, serial_us = 1.0>}
      : tensor<64x8xf32>, tensor<8x16xf32>, tensor<128x16xf32> -> tensor<128x16xf32>
  return %r : tensor<128x16xf32>
}

shard.grid @tp(shape = 4)

func.func @dynamic_n(%a: tensor<64x16xf32>, %b: tensor<16x?xf32>,
                     %c: tensor<256x?xf32>) -> tensor<256x?xf32> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128, 128], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<64x16xf32>, tensor<16x?xf32>, tensor<256x?xf32> -> tensor<256x?xf32>
  return %r : tensor<256x?xf32>
}

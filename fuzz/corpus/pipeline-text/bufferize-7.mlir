shard.grid @tp(shape = 4)

func.func @dynamic_c(%a: tensor<512x64xf32>, %b: tensor<64x32xf32>,
                     %c: tensor<?x32xf32>) -> tensor<128x32xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128, 128, 128, 128], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<512x64xf32>, tensor<64x32xf32>, tensor<?x32xf32> -> tensor<128x32xf32>
  return %r : tensor<128x32xf32>
}

shard.grid @dyn(shape = ?)

func.func @dynamic_group(%a: tensor<128x64xf32>, %b: tensor<64x32xf32>,
                         %c: tensor<128x32xf32>) -> tensor<32x32xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @dyn grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128], strategy = "none",
                                    bound = comm, predicted_us = 1.0, serial_us = 1.0>}
      : tensor<128x64xf32>, tensor<64x32xf32>, tensor<128x32xf32> -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}

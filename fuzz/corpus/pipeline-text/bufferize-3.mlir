shard.grid @tp(shape = 2)

func.func @c_is_a(%a: tensor<256x64xf32>, %b: tensor<64x64xf32>) -> tensor<256x64xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %a on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128, 128], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<256x64xf32>, tensor<64x64xf32>, tensor<256x64xf32> -> tensor<256x64xf32>
  return %r : tensor<256x64xf32>
}

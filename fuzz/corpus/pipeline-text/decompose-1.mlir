shard.grid @tp(shape = 4)

func.func @reduce_scatter(%a: tensor<384x64xf16>, %b: tensor<64x32xf16>,
                          %c: tensor<384x32xf32>) -> tensor<96x32xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128, 256], strategy = "given",
                                    bound = comm, predicted_us = 1.0, serial_us = 2.0>}
      : tensor<384x64xf16>, tensor<64x32xf16>, tensor<384x32xf32> -> tensor<96x32xf32>
  return %r : tensor<96x32xf32>
}

shard.grid @tp(shape = 2)

func.func @reduce_scatter_fill(%a: tensor<128x8xf32>, %b: tensor<8x16xf32>) -> tensor<64x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x16xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<128x16xf32>) -> tensor<128x16xf32>
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [128], strategy = "none",
                                    bound = compute, predicted_us = 1.0, serial_us = 1.0>}
      : tensor<128x8xf32>, tensor<8x16xf32>, tensor<128x16xf32> -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

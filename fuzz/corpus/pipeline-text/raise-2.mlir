shard.grid @tp(shape = 4)

func.func @all_gather_lhs(%a: tensor<32x8xf16>, %b: tensor<8x16xf16>) -> tensor<128x16xf16> {
  %g = shard.all_gather %a on @tp grid_axes = [0] gather_axis = 0 : tensor<32x8xf16> -> tensor<128x8xf16>
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<128x16xf16>
  %c = linalg.fill ins(%zero : f16) outs(%e : tensor<128x16xf16>) -> tensor<128x16xf16>
  %p = linalg.matmul ins(%g, %b : tensor<128x8xf16>, tensor<8x16xf16>) outs(%c : tensor<128x16xf16>) -> tensor<128x16xf16>
  return %p : tensor<128x16xf16>
}

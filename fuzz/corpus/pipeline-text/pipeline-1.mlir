shard.grid @tp(shape = 4)
func.func @all_gather(%x: tensor<128x512xf16>, %w: tensor<512x256xf16>) -> tensor<512x256xf16> {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<128x512xf16> -> tensor<512x512xf16>
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<512x256xf16>
  %c = linalg.fill ins(%zero : f16) outs(%e : tensor<512x256xf16>) -> tensor<512x256xf16>
  %y = linalg.matmul ins(%g, %w : tensor<512x512xf16>, tensor<512x256xf16>) outs(%c : tensor<512x256xf16>) -> tensor<512x256xf16>
  return %y : tensor<512x256xf16>
}

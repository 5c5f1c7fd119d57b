shard.grid @tp(shape = 8)

func.func @move(%x: tensor<1024x8192xf16>, %w: tensor<8192x1024xf16>) -> tensor<1024x1024xf16> {
  %r = shard.all_reduce %x on @tp grid_axes = [0] : tensor<1024x8192xf16> -> tensor<1024x8192xf16>
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<1024x1024xf16>
  %z = linalg.fill ins(%zero : f16) outs(%e : tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  %p = linalg.matmul ins(%r, %w : tensor<1024x8192xf16>, tensor<8192x1024xf16>) outs(%z : tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  return %p : tensor<1024x1024xf16>
}

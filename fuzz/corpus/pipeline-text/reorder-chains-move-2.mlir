shard.grid @tp(shape = 8)

func.func @fused(%a: tensor<1024x512xf16>, %b: tensor<512x8192xf16>, %c: tensor<1024x8192xf16>, %w: tensor<8192x1024xf16>) -> tensor<1024x1024xf16> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<1024x512xf16>, tensor<512x8192xf16>, tensor<1024x8192xf16> -> tensor<1024x8192xf16>
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<1024x1024xf16>
  %z = linalg.fill ins(%zero : f16) outs(%e : tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  %p = linalg.matmul ins(%r, %w : tensor<1024x8192xf16>, tensor<8192x1024xf16>) outs(%z : tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  return %p : tensor<1024x1024xf16>
}

shard.grid @tp(shape = @R@)

func.func @mrs_f32(%a: tensor<1024x256xf32>, %b: tensor<256x256xf32>, %c: tensor<1024x256xf32>) -> tensor<@Q1024@x256xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<1024x256xf32>, tensor<256x256xf32>, tensor<1024x256xf32> -> tensor<@Q1024@x256xf32>
  return %r : tensor<@Q1024@x256xf32>
}

func.func @mrs_bf16(%a: tensor<1024x256xbf16>, %b: tensor<256x256xbf16>, %c: tensor<1024x256xf32>) -> tensor<@Q1024@x256xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<1024x256xbf16>, tensor<256x256xbf16>, tensor<1024x256xf32> -> tensor<@Q1024@x256xf32>
  return %r : tensor<@Q1024@x256xf32>
}

func.func @mrs_bf16_acc(%a: tensor<1024x128xbf16>, %b: tensor<128x256xbf16>, %c: tensor<1024x256xbf16>) -> tensor<@Q1024@x256xbf16> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<1024x128xbf16>, tensor<128x256xbf16>, tensor<1024x256xbf16> -> tensor<@Q1024@x256xbf16>
  return %r : tensor<@Q1024@x256xbf16>
}

func.func @mrs_uneven(%a: tensor<712x128xf32>, %b: tensor<128x96xf32>, %c: tensor<712x96xf32>) -> tensor<@Q712@x96xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<712x128xf32>, tensor<128x96xf32>, tensor<712x96xf32> -> tensor<@Q712@x96xf32>
  return %r : tensor<@Q712@x96xf32>
}

func.func @upstream(%a: tensor<1024x128xf32>, %b: tensor<128x128xf32>) -> tensor<@Q1024@x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x128xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x128xf32>) -> tensor<1024x128xf32>
  %p = linalg.matmul ins(%a, %b : tensor<1024x128xf32>, tensor<128x128xf32>) outs(%c : tensor<1024x128xf32>) -> tensor<1024x128xf32>
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 0 : tensor<1024x128xf32> -> tensor<@Q1024@x128xf32>
  return %r : tensor<@Q1024@x128xf32>
}

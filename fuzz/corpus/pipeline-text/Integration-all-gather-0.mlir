shard.grid @tp(shape = @R@)

func.func @agm_f32(%a: tensor<@Q1024@x256xf32>, %b: tensor<256x256xf32>, %c: tensor<1024x256xf32>) -> tensor<1024x256xf32> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      : tensor<@Q1024@x256xf32>, tensor<256x256xf32>, tensor<1024x256xf32> -> tensor<1024x256xf32>
  return %r : tensor<1024x256xf32>
}

func.func @agm_bf16(%a: tensor<@Q1024@x256xbf16>, %b: tensor<256x256xbf16>, %c: tensor<1024x256xf32>) -> tensor<1024x256xf32> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      : tensor<@Q1024@x256xbf16>, tensor<256x256xbf16>, tensor<1024x256xf32> -> tensor<1024x256xf32>
  return %r : tensor<1024x256xf32>
}

func.func @agm_bf16_acc(%a: tensor<@Q1024@x128xbf16>, %b: tensor<128x256xbf16>, %c: tensor<1024x256xbf16>) -> tensor<1024x256xbf16> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      : tensor<@Q1024@x128xbf16>, tensor<128x256xbf16>, tensor<1024x256xbf16> -> tensor<1024x256xbf16>
  return %r : tensor<1024x256xbf16>
}

func.func @agm_uneven(%a: tensor<@Q712@x128xf32>, %b: tensor<128x96xf32>, %c: tensor<712x96xf32>) -> tensor<712x96xf32> {
  %r = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
      : tensor<@Q712@x128xf32>, tensor<128x96xf32>, tensor<712x96xf32> -> tensor<712x96xf32>
  return %r : tensor<712x96xf32>
}

func.func @upstream(%x: tensor<@Q1024@x128xf32>, %b: tensor<128x128xf32>) -> tensor<1024x128xf32> {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<@Q1024@x128xf32> -> tensor<1024x128xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x128xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x128xf32>) -> tensor<1024x128xf32>
  %y = linalg.matmul ins(%g, %b : tensor<1024x128xf32>, tensor<128x128xf32>) outs(%c : tensor<1024x128xf32>) -> tensor<1024x128xf32>
  return %y : tensor<1024x128xf32>
}

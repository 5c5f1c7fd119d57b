// The entries of ../weight-gradients.mlir written by hand in the textbook
// form: the activations transposed by a plain linalg.generic copy (no
// linalg.transpose, which overlap-decompose would read in place), the
// [b, s] tokens flattened, a 2-D linalg.matmul with default maps next to
// its collective. The reference those entries are compared with.
shard.grid @dp(shape = 4)

#id2 = affine_map<(i, j) -> (i, j)>
#tr2 = affine_map<(i, j) -> (j, i)>
#sc2 = affine_map<(i, j) -> ()>

func.func @xt_dy(%x: tensor<64x96xf32>, %dy: tensor<64x80xf32>) -> tensor<96x80xf32> {
  %et = tensor.empty() : tensor<96x64xf32>
  %xt = linalg.generic {indexing_maps = [#tr2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x96xf32>) outs(%et : tensor<96x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<96x64xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %p = linalg.matmul ins(%xt, %dy : tensor<96x64xf32>, tensor<64x80xf32>) outs(%c : tensor<96x80xf32>) -> tensor<96x80xf32>
  %r = shard.all_reduce %p on @dp grid_axes = [0] : tensor<96x80xf32> -> tensor<96x80xf32>
  return %r : tensor<96x80xf32>
}

func.func @bs_tokens_pmean(%x3: tensor<4x16x96xf32>, %dy3: tensor<4x16x80xf32>) -> tensor<96x80xf32> {
  %x = tensor.collapse_shape %x3 [[0, 1], [2]] : tensor<4x16x96xf32> into tensor<64x96xf32>
  %dy = tensor.collapse_shape %dy3 [[0, 1], [2]] : tensor<4x16x80xf32> into tensor<64x80xf32>
  %et = tensor.empty() : tensor<96x64xf32>
  %xt = linalg.generic {indexing_maps = [#tr2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x96xf32>) outs(%et : tensor<96x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<96x64xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %p = linalg.matmul ins(%xt, %dy : tensor<96x64xf32>, tensor<64x80xf32>) outs(%c : tensor<96x80xf32>) -> tensor<96x80xf32>
  %r = shard.all_reduce %p on @dp grid_axes = [0] : tensor<96x80xf32> -> tensor<96x80xf32>
  %four = arith.constant dense<4.0> : tensor<f32>
  %e2 = tensor.empty() : tensor<96x80xf32>
  %m = linalg.generic {indexing_maps = [#id2, #sc2, #id2], iterator_types = ["parallel", "parallel"]} ins(%r, %four : tensor<96x80xf32>, tensor<f32>) outs(%e2 : tensor<96x80xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<96x80xf32>
  return %m : tensor<96x80xf32>
}

func.func @jax_grad_scatter(%dy: tensor<64x80xf32>, %x: tensor<64x96xf32>) -> tensor<24x80xf32> {
  %et = tensor.empty() : tensor<96x64xf32>
  %xt = linalg.generic {indexing_maps = [#tr2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x96xf32>) outs(%et : tensor<96x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<96x64xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %p = linalg.matmul ins(%xt, %dy : tensor<96x64xf32>, tensor<64x80xf32>) outs(%c : tensor<96x80xf32>) -> tensor<96x80xf32>
  %r = shard.reduce_scatter %p on @dp grid_axes = [0] scatter_axis = 0 : tensor<96x80xf32> -> tensor<24x80xf32>
  return %r : tensor<24x80xf32>
}

func.func @jax_grad_bf16(%dy: tensor<64x80xbf16>, %x: tensor<64x96xbf16>) -> tensor<96x80xbf16> {
  %et = tensor.empty() : tensor<96x64xbf16>
  %xt = linalg.generic {indexing_maps = [#tr2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x96xbf16>) outs(%et : tensor<96x64xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    linalg.yield %a : bf16
  } -> tensor<96x64xbf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %p32 = linalg.matmul ins(%xt, %dy : tensor<96x64xbf16>, tensor<64x80xbf16>) outs(%c : tensor<96x80xf32>) -> tensor<96x80xf32>
  %eb = tensor.empty() : tensor<96x80xbf16>
  %p = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p32 : tensor<96x80xf32>) outs(%eb : tensor<96x80xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<96x80xbf16>
  %r = shard.all_reduce %p on @dp grid_axes = [0] : tensor<96x80xbf16> -> tensor<96x80xbf16>
  return %r : tensor<96x80xbf16>
}

func.func @scatter_bf16(%x: tensor<64x96xbf16>, %dy: tensor<64x80xbf16>) -> tensor<24x80xbf16> {
  %et = tensor.empty() : tensor<96x64xbf16>
  %xt = linalg.generic {indexing_maps = [#tr2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x96xbf16>) outs(%et : tensor<96x64xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    linalg.yield %a : bf16
  } -> tensor<96x64xbf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x80xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<96x80xf32>) -> tensor<96x80xf32>
  %p32 = linalg.matmul ins(%xt, %dy : tensor<96x64xbf16>, tensor<64x80xbf16>) outs(%c : tensor<96x80xf32>) -> tensor<96x80xf32>
  %eb = tensor.empty() : tensor<96x80xbf16>
  %p = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p32 : tensor<96x80xf32>) outs(%eb : tensor<96x80xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<96x80xbf16>
  %r = shard.reduce_scatter %p on @dp grid_axes = [0] scatter_axis = 0 : tensor<96x80xbf16> -> tensor<24x80xbf16>
  return %r : tensor<24x80xbf16>
}

func.func @matmul_transposed_a(%x: tensor<64x96xf32>, %dy: tensor<64x80xf32>, %c: tensor<96x80xf32>) -> tensor<24x80xf32> {
  %et = tensor.empty() : tensor<96x64xf32>
  %xt = linalg.generic {indexing_maps = [#tr2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x96xf32>) outs(%et : tensor<96x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<96x64xf32>
  %p = linalg.matmul ins(%xt, %dy : tensor<96x64xf32>, tensor<64x80xf32>) outs(%c : tensor<96x80xf32>) -> tensor<96x80xf32>
  %r = shard.reduce_scatter %p on @dp grid_axes = [0] scatter_axis = 0 : tensor<96x80xf32> -> tensor<24x80xf32>
  return %r : tensor<24x80xf32>
}

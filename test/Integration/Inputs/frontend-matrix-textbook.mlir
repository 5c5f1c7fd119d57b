// The entries of ../frontend-matrix.mlir written by hand in the textbook
// form (activations flattened, and for the sequence-parallel entries
// transposed to [s, b, h], weights transposed, the collective on rows):
// the references, off the normalization's path. @R@ ranks, @SR@ = 768 / R
// sequence rows per rank, @SR2@ = 2 * @SR@.
shard.grid @tp(shape = @R@)

func.func @ar_f32(%x: tensor<2x768x64xf32>, %w: tensor<32x64xf32>) -> tensor<2x768x32xf32> {
  %zero = arith.constant 0.0 : f32
  %rows = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x768x64xf32> into tensor<1536x64xf32>
  %ew = tensor.empty() : tensor<64x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x64xf32>) outs(%ew : tensor<64x32xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<1536x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1536x32xf32>) -> tensor<1536x32xf32>
  %p = linalg.matmul ins(%rows, %wt : tensor<1536x64xf32>, tensor<64x32xf32>) outs(%c : tensor<1536x32xf32>) -> tensor<1536x32xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<1536x32xf32> -> tensor<1536x32xf32>
  %y = tensor.expand_shape %r [[0, 1], [2]] output_shape [2, 768, 32] : tensor<1536x32xf32> into tensor<2x768x32xf32>
  return %y : tensor<2x768x32xf32>
}

func.func @rs_f32(%x: tensor<2x768x64xf32>, %w: tensor<32x64xf32>) -> tensor<2x@SR@x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<768x2x64xf32>
  %xt = linalg.transpose ins(%x : tensor<2x768x64xf32>) outs(%ex : tensor<768x2x64xf32>) permutation = [1, 0, 2]
  %rows = tensor.collapse_shape %xt [[0, 1], [2]] : tensor<768x2x64xf32> into tensor<1536x64xf32>
  %ew = tensor.empty() : tensor<64x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x64xf32>) outs(%ew : tensor<64x32xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<1536x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1536x32xf32>) -> tensor<1536x32xf32>
  %p = linalg.matmul ins(%rows, %wt : tensor<1536x64xf32>, tensor<64x32xf32>) outs(%c : tensor<1536x32xf32>) -> tensor<1536x32xf32>
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 0 : tensor<1536x32xf32> -> tensor<@SR2@x32xf32>
  %rs = tensor.expand_shape %r [[0, 1], [2]] output_shape [@SR@, 2, 32] : tensor<@SR2@x32xf32> into tensor<@SR@x2x32xf32>
  %ey = tensor.empty() : tensor<2x@SR@x32xf32>
  %y = linalg.transpose ins(%rs : tensor<@SR@x2x32xf32>) outs(%ey : tensor<2x@SR@x32xf32>) permutation = [1, 0, 2]
  return %y : tensor<2x@SR@x32xf32>
}

func.func @ag_f32(%x: tensor<2x@SR@x64xf32>, %w: tensor<32x64xf32>) -> tensor<2x768x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<@SR@x2x64xf32>
  %xt = linalg.transpose ins(%x : tensor<2x@SR@x64xf32>) outs(%ex : tensor<@SR@x2x64xf32>) permutation = [1, 0, 2]
  %rows = tensor.collapse_shape %xt [[0, 1], [2]] : tensor<@SR@x2x64xf32> into tensor<@SR2@x64xf32>
  %g = shard.all_gather %rows on @tp grid_axes = [0] gather_axis = 0 : tensor<@SR2@x64xf32> -> tensor<1536x64xf32>
  %ew = tensor.empty() : tensor<64x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x64xf32>) outs(%ew : tensor<64x32xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<1536x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1536x32xf32>) -> tensor<1536x32xf32>
  %p = linalg.matmul ins(%g, %wt : tensor<1536x64xf32>, tensor<64x32xf32>) outs(%c : tensor<1536x32xf32>) -> tensor<1536x32xf32>
  %ps = tensor.expand_shape %p [[0, 1], [2]] output_shape [768, 2, 32] : tensor<1536x32xf32> into tensor<768x2x32xf32>
  %ey = tensor.empty() : tensor<2x768x32xf32>
  %y = linalg.transpose ins(%ps : tensor<768x2x32xf32>) outs(%ey : tensor<2x768x32xf32>) permutation = [1, 0, 2]
  return %y : tensor<2x768x32xf32>
}

func.func @ar_bf16(%x: tensor<2x768x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<2x768x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %rows = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x768x64xbf16> into tensor<1536x64xbf16>
  %ew = tensor.empty() : tensor<64x32xbf16>
  %wt = linalg.transpose ins(%w : tensor<32x64xbf16>) outs(%ew : tensor<64x32xbf16>) permutation = [1, 0]
  %e = tensor.empty() : tensor<1536x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1536x32xf32>) -> tensor<1536x32xf32>
  %p = linalg.matmul ins(%rows, %wt : tensor<1536x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<1536x32xf32>) -> tensor<1536x32xf32>
  %eh = tensor.empty() : tensor<1536x32xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<1536x32xf32>) outs(%eh : tensor<1536x32xbf16>) {
    ^bb0(%in: f32, %o: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<1536x32xbf16>
  %r = shard.all_reduce %h on @tp grid_axes = [0] : tensor<1536x32xbf16> -> tensor<1536x32xbf16>
  %y = tensor.expand_shape %r [[0, 1], [2]] output_shape [2, 768, 32] : tensor<1536x32xbf16> into tensor<2x768x32xbf16>
  return %y : tensor<2x768x32xbf16>
}

func.func @rs_bf16(%x: tensor<2x768x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<2x@SR@x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<768x2x64xbf16>
  %xt = linalg.transpose ins(%x : tensor<2x768x64xbf16>) outs(%ex : tensor<768x2x64xbf16>) permutation = [1, 0, 2]
  %rows = tensor.collapse_shape %xt [[0, 1], [2]] : tensor<768x2x64xbf16> into tensor<1536x64xbf16>
  %ew = tensor.empty() : tensor<64x32xbf16>
  %wt = linalg.transpose ins(%w : tensor<32x64xbf16>) outs(%ew : tensor<64x32xbf16>) permutation = [1, 0]
  %e = tensor.empty() : tensor<1536x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1536x32xf32>) -> tensor<1536x32xf32>
  %p = linalg.matmul ins(%rows, %wt : tensor<1536x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<1536x32xf32>) -> tensor<1536x32xf32>
  %eh = tensor.empty() : tensor<1536x32xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<1536x32xf32>) outs(%eh : tensor<1536x32xbf16>) {
    ^bb0(%in: f32, %o: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<1536x32xbf16>
  %r = shard.reduce_scatter %h on @tp grid_axes = [0] scatter_axis = 0 : tensor<1536x32xbf16> -> tensor<@SR2@x32xbf16>
  %rs = tensor.expand_shape %r [[0, 1], [2]] output_shape [@SR@, 2, 32] : tensor<@SR2@x32xbf16> into tensor<@SR@x2x32xbf16>
  %ey = tensor.empty() : tensor<2x@SR@x32xbf16>
  %y = linalg.transpose ins(%rs : tensor<@SR@x2x32xbf16>) outs(%ey : tensor<2x@SR@x32xbf16>) permutation = [1, 0, 2]
  return %y : tensor<2x@SR@x32xbf16>
}

func.func @ag_bf16(%x: tensor<2x@SR@x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<2x768x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<@SR@x2x64xbf16>
  %xt = linalg.transpose ins(%x : tensor<2x@SR@x64xbf16>) outs(%ex : tensor<@SR@x2x64xbf16>) permutation = [1, 0, 2]
  %rows = tensor.collapse_shape %xt [[0, 1], [2]] : tensor<@SR@x2x64xbf16> into tensor<@SR2@x64xbf16>
  %g = shard.all_gather %rows on @tp grid_axes = [0] gather_axis = 0 : tensor<@SR2@x64xbf16> -> tensor<1536x64xbf16>
  %ew = tensor.empty() : tensor<64x32xbf16>
  %wt = linalg.transpose ins(%w : tensor<32x64xbf16>) outs(%ew : tensor<64x32xbf16>) permutation = [1, 0]
  %e = tensor.empty() : tensor<1536x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1536x32xf32>) -> tensor<1536x32xf32>
  %p = linalg.matmul ins(%g, %wt : tensor<1536x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<1536x32xf32>) -> tensor<1536x32xf32>
  %ps = tensor.expand_shape %p [[0, 1], [2]] output_shape [768, 2, 32] : tensor<1536x32xf32> into tensor<768x2x32xf32>
  %ey = tensor.empty() : tensor<2x768x32xf32>
  %y = linalg.transpose ins(%ps : tensor<768x2x32xf32>) outs(%ey : tensor<2x768x32xf32>) permutation = [1, 0, 2]
  return %y : tensor<2x768x32xf32>
}

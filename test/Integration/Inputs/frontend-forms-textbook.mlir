// The entries of ../frontend-forms.mlir written by hand in the textbook
// form Overlap has always raised (a 2-D linalg.matmul with default maps
// next to a collective on rows; weights transposed and activations
// flattened explicitly): the reference those entries are compared with,
// so that a wrong normalization cannot pass by agreeing with itself.
shard.grid @tp(shape = 4)

func.func @torch_rowpar(%x: tensor<256x64xf32>, %w: tensor<32x64xf32>) -> tensor<256x32xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<64x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x64xf32>) outs(%et : tensor<64x32xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%x, %wt : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

func.func @bsh_generic(%x: tensor<2x128x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<2x128x32xf32> {
  %zero = arith.constant 0.0 : f32
  %rows = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x128x64xbf16> into tensor<256x64xbf16>
  %et = tensor.empty() : tensor<64x32xbf16>
  %wt = linalg.transpose ins(%w : tensor<32x64xbf16>) outs(%et : tensor<64x32xbf16>) permutation = [1, 0]
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%rows, %wt : tensor<256x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<256x32xf32> -> tensor<256x32xf32>
  %y = tensor.expand_shape %r [[0, 1], [2]] output_shape [2, 128, 32] : tensor<256x32xf32> into tensor<2x128x32xf32>
  return %y : tensor<2x128x32xf32>
}

func.func @bmm_scatter(%x: tensor<8x32x64xf32>, %w: tensor<64x32xf32>) -> tensor<2x32x32xf32> {
  %zero = arith.constant 0.0 : f32
  %rows = tensor.collapse_shape %x [[0, 1], [2]] : tensor<8x32x64xf32> into tensor<256x64xf32>
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%rows, %w : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 0 : tensor<256x32xf32> -> tensor<64x32xf32>
  %y = tensor.expand_shape %r [[0, 1], [2]] output_shape [2, 32, 32] : tensor<64x32xf32> into tensor<2x32x32xf32>
  return %y : tensor<2x32x32xf32>
}

func.func @seq_gather_contract(%x: tensor<1x64x64xf32>, %w: tensor<32x64xf32>) -> tensor<1x256x32xf32> {
  %zero = arith.constant 0.0 : f32
  %rows = tensor.collapse_shape %x [[0, 1], [2]] : tensor<1x64x64xf32> into tensor<64x64xf32>
  %g = shard.all_gather %rows on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xf32> -> tensor<256x64xf32>
  %et = tensor.empty() : tensor<64x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x64xf32>) outs(%et : tensor<64x32xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%g, %wt : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %y = tensor.expand_shape %p [[0, 1], [2]] output_shape [1, 256, 32] : tensor<256x32xf32> into tensor<1x256x32xf32>
  return %y : tensor<1x256x32xf32>
}

func.func @sbh_gather_collapse(%x: tensor<32x2x64xf32>, %w: tensor<64x32xf32>) -> tensor<256x32xf32> {
  %zero = arith.constant 0.0 : f32
  %rows = tensor.collapse_shape %x [[0, 1], [2]] : tensor<32x2x64xf32> into tensor<64x64xf32>
  %g = shard.all_gather %rows on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xf32> -> tensor<256x64xf32>
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%g, %w : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  return %p : tensor<256x32xf32>
}

func.func @seq_scatter_strided(%x: tensor<2x128x64xf32>, %w: tensor<64x32xf32>) -> tensor<2x32x32xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<128x2x64xf32>
  %xt = linalg.transpose ins(%x : tensor<2x128x64xf32>) outs(%et : tensor<128x2x64xf32>) permutation = [1, 0, 2]
  %rows = tensor.collapse_shape %xt [[0, 1], [2]] : tensor<128x2x64xf32> into tensor<256x64xf32>
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%rows, %w : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 0 : tensor<256x32xf32> -> tensor<64x32xf32>
  %rs = tensor.expand_shape %r [[0, 1], [2]] output_shape [32, 2, 32] : tensor<64x32xf32> into tensor<32x2x32xf32>
  %ey = tensor.empty() : tensor<2x32x32xf32>
  %y = linalg.transpose ins(%rs : tensor<32x2x32xf32>) outs(%ey : tensor<2x32x32xf32>) permutation = [1, 0, 2]
  return %y : tensor<2x32x32xf32>
}

func.func @seq_gather_strided(%x: tensor<2x32x64xf32>, %w: tensor<64x32xf32>) -> tensor<256x32xf32> {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 1 : tensor<2x32x64xf32> -> tensor<2x128x64xf32>
  %rows = tensor.collapse_shape %g [[0, 1], [2]] : tensor<2x128x64xf32> into tensor<256x64xf32>
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%rows, %w : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  return %p : tensor<256x32xf32>
}

// The cast as a round trip bf16 -> f32 -> bf16 after the rounding (exact,
// so the same values), which overlap-raise does not look through: the
// all-reduce stays unsplit, off the fused path.
func.func @cast_before_psum(%x: tensor<256x64xbf16>, %w: tensor<64x32xbf16>) -> tensor<256x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<256x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %eh = tensor.empty() : tensor<256x32xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<256x32xf32>) outs(%eh : tensor<256x32xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      %w32 = arith.extf %t : bf16 to f32
      %t2 = arith.truncf %w32 : f32 to bf16
      linalg.yield %t2 : bf16
  } -> tensor<256x32xbf16>
  %r = shard.all_reduce %h on @tp grid_axes = [0] : tensor<256x32xbf16> -> tensor<256x32xbf16>
  return %r : tensor<256x32xbf16>
}

// Two gathers of the same rows, each feeding one matmul: the textbook
// pairs, off the merging path.
func.func @gather_two_matmuls(%x: tensor<64x64xf32>, %wg: tensor<64x32xf32>, %wu: tensor<64x32xf32>) -> (tensor<256x32xf32>, tensor<256x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %g1 = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xf32> -> tensor<256x64xf32>
  %g2 = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xf32> -> tensor<256x64xf32>
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %pg = linalg.matmul ins(%g1, %wg : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %pu = linalg.matmul ins(%g2, %wu : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  return %pg, %pu : tensor<256x32xf32>, tensor<256x32xf32>
}

// The same before a reduce-scatter, also off the fused path.
func.func @cast_before_scatter(%x: tensor<256x64xbf16>, %w: tensor<64x32xbf16>) -> tensor<64x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<256x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %eh = tensor.empty() : tensor<256x32xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<256x32xf32>) outs(%eh : tensor<256x32xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      %w32 = arith.extf %t : bf16 to f32
      %t2 = arith.truncf %w32 : f32 to bf16
      linalg.yield %t2 : bf16
  } -> tensor<256x32xbf16>
  %r = shard.reduce_scatter %h on @tp grid_axes = [0] scatter_axis = 0 : tensor<256x32xbf16> -> tensor<64x32xbf16>
  return %r : tensor<64x32xbf16>
}

// The scale written before the gather by hand: the textbook pair.
func.func @scale_after_gather(%x: tensor<64x64xf32>, %w: tensor<64x32xf32>) -> tensor<256x32xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %es = tensor.empty() : tensor<64x64xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x64xf32>) outs(%es : tensor<64x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %half : f32
      linalg.yield %m : f32
  } -> tensor<64x64xf32>
  %g = shard.all_gather %s on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xf32> -> tensor<256x64xf32>
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%g, %w : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  return %p : tensor<256x32xf32>
}

// The sequence moved first by hand: [s, b, h] rows gathered, the textbook
// pair, the product moved back.
func.func @seq_gather_strided_contract(%x: tensor<2x32x64xf32>, %w: tensor<32x64xf32>) -> tensor<2x128x32xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<32x2x64xf32>
  %xt = linalg.transpose ins(%x : tensor<2x32x64xf32>) outs(%et : tensor<32x2x64xf32>) permutation = [1, 0, 2]
  %rows = tensor.collapse_shape %xt [[0, 1], [2]] : tensor<32x2x64xf32> into tensor<64x64xf32>
  %g = shard.all_gather %rows on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xf32> -> tensor<256x64xf32>
  %ew = tensor.empty() : tensor<64x32xf32>
  %wt = linalg.transpose ins(%w : tensor<32x64xf32>) outs(%ew : tensor<64x32xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%g, %wt : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %ps = tensor.expand_shape %p [[0, 1], [2]] output_shape [128, 2, 32] : tensor<256x32xf32> into tensor<128x2x32xf32>
  %ey = tensor.empty() : tensor<2x128x32xf32>
  %y = linalg.transpose ins(%ps : tensor<128x2x32xf32>) outs(%ey : tensor<2x128x32xf32>) permutation = [1, 0, 2]
  return %y : tensor<2x128x32xf32>
}

shard.grid @tp(shape = 2)
func.func @fine(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> (tensor<256x32xf32>, index) {
  %i = shard.process_linear_index on @tp : index
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<256x64xf32>, tensor<64x32xf32>, tensor<256x32xf32> -> tensor<256x32xf32>
  return %r, %i : tensor<256x32xf32>, index
}

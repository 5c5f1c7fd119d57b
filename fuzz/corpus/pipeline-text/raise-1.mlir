shard.grid @tp(shape = 4)

func.func @cast_between(%a: tensor<256x8xbf16>, %b: tensor<8x16xbf16>) -> tensor<?x16xf32> {
  %c = arith.constant dense<1.0> : tensor<256x16xf32>
  %p = linalg.matmul ins(%a, %b : tensor<256x8xbf16>, tensor<8x16xbf16>) outs(%c : tensor<256x16xf32>) -> tensor<256x16xf32>
  %d = tensor.cast %p : tensor<256x16xf32> to tensor<?x16xf32>
  %s = shard.reduce_scatter %d on @tp grid_axes = [0] scatter_axis = 0 : tensor<?x16xf32> -> tensor<?x16xf32>
  return %s : tensor<?x16xf32>
}

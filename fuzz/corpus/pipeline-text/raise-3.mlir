shard.grid @tp(shape = 4)

func.func @other_users(%a: tensor<64x8xf32>, %b: tensor<8x16xf32>, %c: tensor<64x16xf32>) -> (tensor<64x16xf32>, tensor<64x16xf32>) {
  %p = linalg.matmul ins(%a, %b : tensor<64x8xf32>, tensor<8x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<64x16xf32> -> tensor<64x16xf32>
  return %r, %p : tensor<64x16xf32>, tensor<64x16xf32>
}

func.func @max_reduction(%a: tensor<64x8xf32>, %b: tensor<8x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %p = linalg.matmul ins(%a, %b : tensor<64x8xf32>, tensor<8x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] reduction = max : tensor<64x16xf32> -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

func.func @transposed(%a: tensor<8x64xf32>, %b: tensor<8x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<8x64xf32>, tensor<8x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<64x16xf32> -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

func.func @dynamic(%a: tensor<?x8xf32>, %b: tensor<8x16xf32>, %c: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %p = linalg.matmul ins(%a, %b : tensor<?x8xf32>, tensor<8x16xf32>) outs(%c : tensor<?x16xf32>) -> tensor<?x16xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<?x16xf32> -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}

func.func @column_scatter(%a: tensor<64x8xf32>, %b: tensor<8x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x4xf32> {
  %p = linalg.matmul ins(%a, %b : tensor<64x8xf32>, tensor<8x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 1 : tensor<64x16xf32> -> tensor<64x4xf32>
  return %r : tensor<64x4xf32>
}

func.func @widening_collective(%a: tensor<64x8xf16>, %b: tensor<8x16xf16>, %c: tensor<64x16xf16>) -> tensor<64x16xf32> {
  %p = linalg.matmul ins(%a, %b : tensor<64x8xf16>, tensor<8x16xf16>) outs(%c : tensor<64x16xf16>) -> tensor<64x16xf16>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<64x16xf16> -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

func.func @integer(%a: tensor<64x8xi32>, %b: tensor<8x16xi32>, %c: tensor<64x16xi32>) -> tensor<64x16xi32> {
  %p = linalg.matmul ins(%a, %b : tensor<64x8xi32>, tensor<8x16xi32>) outs(%c : tensor<64x16xi32>) -> tensor<64x16xi32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<64x16xi32> -> tensor<64x16xi32>
  return %r : tensor<64x16xi32>
}

func.func @gather_other_users(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %c: tensor<64x16xf32>) -> (tensor<64x16xf32>, tensor<64x8xf32>) {
  %g = shard.all_gather %a on @tp grid_axes = [0] gather_axis = 0 : tensor<16x8xf32> -> tensor<64x8xf32>
  %p = linalg.matmul ins(%g, %b : tensor<64x8xf32>, tensor<8x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %p, %g : tensor<64x16xf32>, tensor<64x8xf32>
}

func.func @gather_columns(%a: tensor<64x2xf32>, %b: tensor<8x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %g = shard.all_gather %a on @tp grid_axes = [0] gather_axis = 1 : tensor<64x2xf32> -> tensor<64x8xf32>
  %p = linalg.matmul ins(%g, %b : tensor<64x8xf32>, tensor<8x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %p : tensor<64x16xf32>
}

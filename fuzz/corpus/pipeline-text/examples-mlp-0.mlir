shard.grid @tp(shape = 4)

func.func @mlp(%x: tensor<256x512xf32>, %w1: tensor<512x512xf32>,
               %w2: tensor<512x512xf32>) -> tensor<256x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1024x512xf32>
  %c1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1024x512xf32>) -> tensor<1024x512xf32>
  %h = overlap.all_gather_matmul %x, %w1, %c1 on @tp grid_axes = [0]
      : tensor<256x512xf32>, tensor<512x512xf32>, tensor<1024x512xf32>
      -> tensor<1024x512xf32>
  %e2 = tensor.empty() : tensor<1024x512xf32>
  %a = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<1024x512xf32>) outs(%e2 : tensor<1024x512xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
  } -> tensor<1024x512xf32>
  %c2 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1024x512xf32>) -> tensor<1024x512xf32>
  %y = overlap.matmul_reduce_scatter %a, %w2, %c2 on @tp grid_axes = [0]
      : tensor<1024x512xf32>, tensor<512x512xf32>, tensor<1024x512xf32>
      -> tensor<256x512xf32>
  return %y : tensor<256x512xf32>
}

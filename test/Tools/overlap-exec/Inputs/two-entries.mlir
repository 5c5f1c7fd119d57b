// Two public functions, one of them with a type overlap-exec cannot run:
// overlap-compile embeds a signature only for an entry it can describe.
shard.grid @tp(shape = 2)
func.func @mar(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<256x64xf32>, tensor<64x32xf32>, tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}
func.func @mar_c32(%a: tensor<4x4xcomplex<f32>>) -> tensor<4x4xcomplex<f32>> {
  return %a : tensor<4x4xcomplex<f32>>
}

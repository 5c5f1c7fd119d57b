// An expert-parallel FFN (a mixture-of-experts layer) over 4 ranks, written
// as upstream MLIR: `shard.all_to_all` and linalg, as a partitioned
// program has them.
//
//   X (each rank holds 64 tokens routed to each of the 8 experts)
//     -> dispatch all-to-all: every rank gets the tokens of its 2 experts
//        from all 4 ranks (4 x 64 = 256 per expert)
//     -> up-projection (batch_matmul over the 2 local experts, 64 -> 128)
//     -> ReLU
//     -> down-projection (batch_matmul, 128 -> 64)
//     -> combine all-to-all: the tokens go back to the ranks they came from
//     -> Y (64 tokens per expert, as X)
//
// overlap-raise fuses each all-to-all with the experts' matmul next to it
// (overlap.all_to_all_matmul, overlap.matmul_all_to_all); a plan splits the
// tokens into tiles, so each tile's exchange hides behind another tile's
// expert GEMMs.

shard.grid @ep(shape = 4)

func.func @moe(%x: tensor<8x64x64xf32>, %w1: tensor<2x64x128xf32>,
               %w2: tensor<2x128x64xf32>) -> tensor<8x64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 1
      : tensor<8x64x64xf32> -> tensor<2x256x64xf32>
  %e1 = tensor.empty() : tensor<2x256x128xf32>
  %c1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x256x128xf32>) -> tensor<2x256x128xf32>
  %h = linalg.batch_matmul ins(%t, %w1 : tensor<2x256x64xf32>, tensor<2x64x128xf32>)
                           outs(%c1 : tensor<2x256x128xf32>) -> tensor<2x256x128xf32>
  %a = linalg.generic {
      indexing_maps = [affine_map<(e, i, j) -> (e, i, j)>, affine_map<(e, i, j) -> (e, i, j)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%h : tensor<2x256x128xf32>) outs(%e1 : tensor<2x256x128xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
  } -> tensor<2x256x128xf32>
  %e2 = tensor.empty() : tensor<2x256x64xf32>
  %c2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x256x64xf32>) -> tensor<2x256x64xf32>
  %y = linalg.batch_matmul ins(%a, %w2 : tensor<2x256x128xf32>, tensor<2x128x64xf32>)
                           outs(%c2 : tensor<2x256x64xf32>) -> tensor<2x256x64xf32>
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 1 concat_axis = 0
      : tensor<2x256x64xf32> -> tensor<8x64x64xf32>
  return %z : tensor<8x64x64xf32>
}

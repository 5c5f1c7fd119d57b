shard.grid @tp(shape = 2)

func.func @reduce_scatter_tile(%a: memref<128x8xf32>, %b: memref<8x16xf32>, %out: memref<64x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %a3 = memref.expand_shape %a [[0, 1], [2]] output_shape [2, 64, 8] : memref<128x8xf32> into memref<2x64x8xf32>
  %pk = memref.alloc() {alignment = 64 : i64} : memref<2x64x16xf32>
  linalg.fill ins(%zero : f32) outs(%pk : memref<2x64x16xf32>)
  linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%a3, %b : memref<2x64x8xf32>, memref<8x16xf32>) outs(%pk : memref<2x64x16xf32>)
  %flat = memref.collapse_shape %pk [[0, 1], [2]] : memref<2x64x16xf32> into memref<128x16xf32>
  %r = memref.alloc() {alignment = 64 : i64} : memref<64x16xf32>
  overlap.reduce_scatter %flat into %r on @tp grid_axes = [0] : memref<128x16xf32>, memref<64x16xf32>
  memref.copy %r, %out : memref<64x16xf32> to memref<64x16xf32>
  return
}

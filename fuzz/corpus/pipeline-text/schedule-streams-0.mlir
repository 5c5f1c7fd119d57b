shard.grid @tp(shape = 4)

func.func @all_reduce_tiles(%a: memref<256x64xf32>, %b: memref<64x32xf32>, %c: memref<256x32xf32>) {
  %a0 = memref.subview %a[0, 0] [128, 64] [1, 1] : memref<256x64xf32> to memref<128x64xf32, strided<[64, 1]>>
  %c0 = memref.subview %c[0, 0] [128, 32] [1, 1] : memref<256x32xf32> to memref<128x32xf32, strided<[32, 1]>>
  linalg.matmul ins(%a0, %b : memref<128x64xf32, strided<[64, 1]>>, memref<64x32xf32>) outs(%c0 : memref<128x32xf32, strided<[32, 1]>>)
  overlap.all_reduce %c0 on @tp grid_axes = [0] : memref<128x32xf32, strided<[32, 1]>>
  %a1 = memref.subview %a[128, 0] [128, 64] [1, 1] : memref<256x64xf32> to memref<128x64xf32, strided<[64, 1], offset: 8192>>
  %c1 = memref.subview %c[128, 0] [128, 32] [1, 1] : memref<256x32xf32> to memref<128x32xf32, strided<[32, 1], offset: 4096>>
  linalg.matmul ins(%a1, %b : memref<128x64xf32, strided<[64, 1], offset: 8192>>, memref<64x32xf32>) outs(%c1 : memref<128x32xf32, strided<[32, 1], offset: 4096>>)
  overlap.all_reduce %c1 on @tp grid_axes = [0] : memref<128x32xf32, strided<[32, 1], offset: 4096>>
  return
}

shard.grid @tp(shape = 4)

func.func @dynamic_layout(%a: memref<128x64xf32>, %b: memref<64x32xf32>, %c: memref<256x32xf32>, %off: index) {
  %c0 = memref.subview %c[%off, 0] [128, 32] [1, 1] : memref<256x32xf32> to memref<128x32xf32, strided<[32, 1], offset: ?>>
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x32xf32>) outs(%c0 : memref<128x32xf32, strided<[32, 1], offset: ?>>)
  overlap.all_reduce %c0 on @tp grid_axes = [0] : memref<128x32xf32, strided<[32, 1], offset: ?>>
  %c1 = memref.subview %c[128, 0] [128, 32] [1, 1] : memref<256x32xf32> to memref<128x32xf32, strided<[32, 1], offset: 4096>>
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x32xf32>) outs(%c1 : memref<128x32xf32, strided<[32, 1], offset: 4096>>)
  overlap.all_reduce %c1 on @tp grid_axes = [0] : memref<128x32xf32, strided<[32, 1], offset: 4096>>
  return
}

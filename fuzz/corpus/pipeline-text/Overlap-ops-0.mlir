shard.grid @tp(shape = 8)
shard.grid @grid2d(shape = 2x4)

func.func @fused(%a: tensor<4096x3072xf16>, %b: tensor<3072x8192xf16>,
                 %c: tensor<4096x8192xf16>, %cf: tensor<4096x8192xf32>,
                 %al: tensor<512x3072xf16>)
    -> (tensor<4096x8192xf16>, tensor<512x8192xf32>, tensor<4096x8192xf16>) {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [512, 896, 896, 896, 896],
                                    strategy = "mc2", bound = comm,
                                    predicted_us = 1282.8, serial_us = 1874.0>}
      : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16>
      -> tensor<4096x8192xf16>
  %s = overlap.matmul_reduce_scatter %a, %b, %cf on @tp grid_axes = [0]
      : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf32>
      -> tensor<512x8192xf32>
  %g = overlap.all_gather_matmul %al, %b, %c on @tp grid_axes = [0]
      {overlap.plan = #overlap.plan<tiles = [4096], strategy = "none",
                                    bound = compute, predicted_us = 2.5e3,
                                    serial_us = 2500.25>}
      : tensor<512x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16>
      -> tensor<4096x8192xf16>
  return %r, %s, %g : tensor<4096x8192xf16>, tensor<512x8192xf32>, tensor<4096x8192xf16>
}

func.func @two_axes(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>,
                    %c: tensor<64x16xbf16>) -> tensor<8x16xbf16> {
  %s = overlap.matmul_reduce_scatter %a, %b, %c on @grid2d grid_axes = [1, 0]
      : tensor<64x32xbf16>, tensor<32x16xbf16>, tensor<64x16xbf16>
      -> tensor<8x16xbf16>
  return %s : tensor<8x16xbf16>
}

func.func @chain(%a1: tensor<10x100xf32>, %a2: tensor<100x5xf32>,
                 %a3: tensor<5x50xf32>) -> tensor<10x50xf32> {
  %p = overlap.chain_matmul %a1, %a2, %a3
      : tensor<10x100xf32>, tensor<100x5xf32>, tensor<5x50xf32>
      -> tensor<10x50xf32>
  return %p : tensor<10x50xf32>
}

func.func @tensor_collectives(%t: tensor<1024x64xf32>, %h: tensor<128x64xf16>)
    -> (tensor<1024x64xf32>, tensor<1024x64xf32>, tensor<128x64xf32>,
        tensor<1024x64xf16>) {
  %0 = overlap.all_reduce %t on @tp grid_axes = [0]
      : tensor<1024x64xf32> -> tensor<1024x64xf32>
  %1 = overlap.all_reduce %t on @tp grid_axes = [0] reduction = <max>
      : tensor<1024x64xf32> -> tensor<1024x64xf32>
  %2 = overlap.reduce_scatter %t on @tp grid_axes = [0] reduction = <avg>
      : tensor<1024x64xf32> -> tensor<128x64xf32>
  %4 = overlap.reduce_scatter %t into %2 on @tp grid_axes = [0]
      : tensor<1024x64xf32>, tensor<128x64xf32> -> tensor<128x64xf32>
  %3 = overlap.all_gather %h on @tp grid_axes = [0]
      : tensor<128x64xf16> -> tensor<1024x64xf16>
  return %0, %1, %2, %3 : tensor<1024x64xf32>, tensor<1024x64xf32>,
                          tensor<128x64xf32>, tensor<1024x64xf16>
}

func.func @memref_collectives(%m: memref<1024x64xf32>, %o: memref<128x64xf32>,
                              %h: memref<128x64xf16>, %g: memref<1024x64xf16>,
                              %v: memref<128x64xf32, strided<[128, 1], offset: 64>>) {
  overlap.all_reduce %m on @tp grid_axes = [0] reduction = <min> : memref<1024x64xf32>
  overlap.all_reduce %v on @tp grid_axes = [0] reduction = <prod>
      : memref<128x64xf32, strided<[128, 1], offset: 64>>
  overlap.reduce_scatter %m into %o on @tp grid_axes = [0]
      : memref<1024x64xf32>, memref<128x64xf32>
  overlap.all_gather %h into %g on @tp grid_axes = [0]
      : memref<128x64xf16>, memref<1024x64xf16>
  return
}

func.func @streams(%a0: memref<512x64xf32>, %b: memref<64x256xf32>,
                   %c0: memref<512x256xf32>, %c1: memref<512x256xf32>) {
  %sig = overlap.signals : !overlap.signals<2>
  overlap.concurrent {
    overlap.stream compute {
      linalg.matmul ins(%a0, %b : memref<512x64xf32>, memref<64x256xf32>)
                    outs(%c0 : memref<512x256xf32>)
      overlap.signal %sig[0] : !overlap.signals<2>
      linalg.matmul ins(%a0, %b : memref<512x64xf32>, memref<64x256xf32>)
                    outs(%c1 : memref<512x256xf32>)
      overlap.signal %sig[1] : !overlap.signals<2>
    }
    overlap.stream comm {
      overlap.wait %sig[0] : !overlap.signals<2>
      overlap.all_reduce %c0 on @tp grid_axes = [0] : memref<512x256xf32>
      overlap.wait %sig[1] : !overlap.signals<2>
      overlap.all_reduce %c1 on @tp grid_axes = [0] : memref<512x256xf32>
    }
    overlap.stream "copy engine" {
    }
  }
  return
}

func.func @empty_axes(%t: tensor<7x3xf32>) -> tensor<7x3xf32> {
  %0 = overlap.reduce_scatter %t on @tp grid_axes = []
      : tensor<7x3xf32> -> tensor<7x3xf32>
  return %0 : tensor<7x3xf32>
}

func.func @tiles(%c: tensor<256x32xf32>, %d: tensor<4x8x16xf32>)
    -> (tensor<256x32xf32>, tensor<4x8x16xf32>) {
  %r = overlap.tiles %c : tensor<256x32xf32>
      (%t0 = [0, 0] [128, 32], %t1 = [128, 0] [128, 32]) {
    overlap.yield %t1, %t0 : tensor<128x32xf32>, tensor<128x32xf32>
  } attributes {note = "swap"}
  %s = overlap.tiles %d : tensor<4x8x16xf32>
      (%u0 = [0, 0, 0] [4, 2, 16], %u1 = [0, 2, 0] [4, 4, 16]) {
    %g = overlap.all_reduce %u1 on @tp grid_axes = [0]
        : tensor<4x4x16xf32> -> tensor<4x4x16xf32>
    overlap.yield %u0, %g : tensor<4x2x16xf32>, tensor<4x4x16xf32>
  }
  return %r, %s : tensor<256x32xf32>, tensor<4x8x16xf32>
}

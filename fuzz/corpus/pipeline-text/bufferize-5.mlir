func.func @tiles_swap(%c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %r = overlap.tiles %c : tensor<256x32xf32>
      (%t0 = [0, 0] [128, 32], %t1 = [128, 0] [128, 32]) {
    overlap.yield %t1, %t0 : tensor<128x32xf32>, tensor<128x32xf32>
  }
  return %r : tensor<256x32xf32>
}

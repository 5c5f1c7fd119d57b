func.func @f(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  %e = tensor.empty() : tensor<64x64xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<64x64xbf16>, tensor<64x64xbf16>) outs(%e : tensor<64x64xbf16>) {
  ^bb0(%x: bf16, %y: bf16, %o: bf16):
    %s = arith.addf %x, %y : bf16
    %m = arith.mulf %s, %x : bf16
    %t = math.tanh %m : bf16
    %d = arith.divf %t, %y : bf16
    %c = arith.cmpf olt, %d, %x : bf16
    %z = arith.select %c, %d, %x : bf16
    %mx = arith.maximumf %z, %y : bf16
    linalg.yield %mx : bf16
  } -> tensor<64x64xbf16>
  return %r : tensor<64x64xbf16>
}

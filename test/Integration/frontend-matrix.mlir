// The frontend forms as a matrix: {all-reduce, reduce-scatter along the
// sequence, all-gather along the sequence} x {f32, bf16 factors with f32
// accumulation (the bf16 sums rounded before the all-reduce and
// reduce-scatter)} x {none, uniform:2, uniform:3, auto} x {2, 3, 4} host
// ranks. Each form is a [batch = 2, seq, hidden] linalg.contract with a
// PyTorch-layout weight; batch 2 makes the sequence collectives the strided
// case. Each is compared bit for bit with the same entry written by hand in
// the textbook form (Inputs/frontend-matrix-textbook.mlir), compiled
// unsplit: the normalization is not on the reference's path.
//
// A template: @R@ is the rank count, @SR@ = 768 / R, @SR2@ = 2 * @SR@.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: for r in 2 3 4; do sr=$((768 / r)); sed -e "s/@R@/$r/g" -e "s/@SR2@/$((2 * sr))/g" -e "s/@SR@/$sr/g" %s > %t/f$r.mlir && sed -e "s/@R@/$r/g" -e "s/@SR2@/$((2 * sr))/g" -e "s/@SR@/$sr/g" %S/Inputs/frontend-matrix-textbook.mlir > %t/t$r.mlir && for e in ar_f32 ar_bf16 rs_f32 rs_bf16 ag_f32 ag_bf16; do overlap-compile %t/t$r.mlir --entry $e --strategy none --emit=so -o %t/$e.$r.ref.so && for s in none uniform:2 uniform:3 auto; do overlap-compile %t/f$r.mlir --entry $e --strategy $s --emit=so -o %t/$e.$r.so && overlap-exec %t/$e.$r.so --ref %t/$e.$r.ref.so --ranks $r --seed $r | tail -1 || echo "FAILED $e ranks=$r strategy=$s"; done; done; done 2>&1 | FileCheck %s
// Every form is raised (so the split plans are the fused path's).
// RUN: overlap-opt %t/f4.mlir --overlap-raise --remarks-filter=overlap -o /dev/null 2>&1 | FileCheck %s --check-prefix=RAISED

// CHECK-COUNT-72: OK
// CHECK-NOT: FAILED
// RAISED-COUNT-6: remark: [Passed] raised

shard.grid @tp(shape = @R@)

func.func @ar_f32(%x: tensor<2x768x64xf32>, %w: tensor<32x64xf32>) -> tensor<2x768x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ep = tensor.empty() : tensor<2x768x32xf32>
  %cp = linalg.fill ins(%zero : f32) outs(%ep : tensor<2x768x32xf32>) -> tensor<2x768x32xf32>
  %p = linalg.contract indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (n, k)>, affine_map<(b, s, n, k) -> (b, s, n)>]
      ins(%x, %w : tensor<2x768x64xf32>, tensor<32x64xf32>) outs(%cp : tensor<2x768x32xf32>) -> tensor<2x768x32xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<2x768x32xf32> -> tensor<2x768x32xf32>
  return %r : tensor<2x768x32xf32>
}

func.func @rs_f32(%x: tensor<2x768x64xf32>, %w: tensor<32x64xf32>) -> tensor<2x@SR@x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ep = tensor.empty() : tensor<2x768x32xf32>
  %cp = linalg.fill ins(%zero : f32) outs(%ep : tensor<2x768x32xf32>) -> tensor<2x768x32xf32>
  %p = linalg.contract indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (n, k)>, affine_map<(b, s, n, k) -> (b, s, n)>]
      ins(%x, %w : tensor<2x768x64xf32>, tensor<32x64xf32>) outs(%cp : tensor<2x768x32xf32>) -> tensor<2x768x32xf32>
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 1 : tensor<2x768x32xf32> -> tensor<2x@SR@x32xf32>
  return %r : tensor<2x@SR@x32xf32>
}

func.func @ag_f32(%x: tensor<2x@SR@x64xf32>, %w: tensor<32x64xf32>) -> tensor<2x768x32xf32> {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 1 : tensor<2x@SR@x64xf32> -> tensor<2x768x64xf32>
  %ep = tensor.empty() : tensor<2x768x32xf32>
  %cp = linalg.fill ins(%zero : f32) outs(%ep : tensor<2x768x32xf32>) -> tensor<2x768x32xf32>
  %p = linalg.contract indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (n, k)>, affine_map<(b, s, n, k) -> (b, s, n)>]
      ins(%g, %w : tensor<2x768x64xf32>, tensor<32x64xf32>) outs(%cp : tensor<2x768x32xf32>) -> tensor<2x768x32xf32>
  return %p : tensor<2x768x32xf32>
}

func.func @ar_bf16(%x: tensor<2x768x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<2x768x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %ep = tensor.empty() : tensor<2x768x32xf32>
  %cp = linalg.fill ins(%zero : f32) outs(%ep : tensor<2x768x32xf32>) -> tensor<2x768x32xf32>
  %p = linalg.contract indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (n, k)>, affine_map<(b, s, n, k) -> (b, s, n)>]
      ins(%x, %w : tensor<2x768x64xbf16>, tensor<32x64xbf16>) outs(%cp : tensor<2x768x32xf32>) -> tensor<2x768x32xf32>
  %ehh = tensor.empty() : tensor<2x768x32xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j, l) -> (i, j, l)>, affine_map<(i, j, l) -> (i, j, l)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p : tensor<2x768x32xf32>) outs(%ehh : tensor<2x768x32xbf16>) {
    ^bb0(%in: f32, %o: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<2x768x32xbf16>
  %r = shard.all_reduce %h on @tp grid_axes = [0] : tensor<2x768x32xbf16> -> tensor<2x768x32xbf16>
  return %r : tensor<2x768x32xbf16>
}

func.func @rs_bf16(%x: tensor<2x768x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<2x@SR@x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %ep = tensor.empty() : tensor<2x768x32xf32>
  %cp = linalg.fill ins(%zero : f32) outs(%ep : tensor<2x768x32xf32>) -> tensor<2x768x32xf32>
  %p = linalg.contract indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (n, k)>, affine_map<(b, s, n, k) -> (b, s, n)>]
      ins(%x, %w : tensor<2x768x64xbf16>, tensor<32x64xbf16>) outs(%cp : tensor<2x768x32xf32>) -> tensor<2x768x32xf32>
  %ehh = tensor.empty() : tensor<2x768x32xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j, l) -> (i, j, l)>, affine_map<(i, j, l) -> (i, j, l)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p : tensor<2x768x32xf32>) outs(%ehh : tensor<2x768x32xbf16>) {
    ^bb0(%in: f32, %o: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<2x768x32xbf16>
  %r = shard.reduce_scatter %h on @tp grid_axes = [0] scatter_axis = 1 : tensor<2x768x32xbf16> -> tensor<2x@SR@x32xbf16>
  return %r : tensor<2x@SR@x32xbf16>
}

func.func @ag_bf16(%x: tensor<2x@SR@x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<2x768x32xf32> {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 1 : tensor<2x@SR@x64xbf16> -> tensor<2x768x64xbf16>
  %ep = tensor.empty() : tensor<2x768x32xf32>
  %cp = linalg.fill ins(%zero : f32) outs(%ep : tensor<2x768x32xf32>) -> tensor<2x768x32xf32>
  %p = linalg.contract indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (n, k)>, affine_map<(b, s, n, k) -> (b, s, n)>]
      ins(%g, %w : tensor<2x768x64xbf16>, tensor<32x64xbf16>) outs(%cp : tensor<2x768x32xf32>) -> tensor<2x768x32xf32>
  return %p : tensor<2x768x32xf32>
}

// RUN: overlap-opt %s --overlap-raise --remarks-filter-missed=overlap -verify-diagnostics | FileCheck %s
// RUN: not overlap-opt %s --overlap-check-collectives -o /dev/null 2>&1 | FileCheck %s --check-prefix=CHECKED

// A known bug, kept as a failing test until it is fixed (then XPASS
// reminds to drop the XFAIL): an all-to-all whose dispatched tokens feed a
// matmul and are also used elsewhere is not fused, rightly, but the reason
// overlap-raise and overlap-check-collectives give is the catch-all "it
// neither consumes the result of the experts' matmul ... nor feeds its
// tokens to one", although it does feed its tokens to one.
// whyNotDispatch's "its result has other users than one matmul" is lost:
// whyAllToAllNotRaised returns the dispatch reason only when the matmul was
// found, and the use check comes before that.
// XFAIL: *

shard.grid @ep(shape = 4)

// CHECK-LABEL: func.func @dispatch_other_users
// CHECK: shard.all_to_all
// CHECK: linalg.matmul
// CHECKED: error: 'shard.all_to_all' op is not lowered by Overlap, which lowers a collective only fused with a matmul, and overlap-raise did not fuse it: its result has other users than one matmul
func.func @dispatch_other_users(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>, %c: tensor<64x48xf32>) -> (tensor<64x48xf32>, tensor<64x32xf32>) {
  // expected-remark @+1 {{not raised to a fused overlap op: its result has other users than one matmul}}
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xf32> -> tensor<64x32xf32>
  %h = linalg.matmul ins(%t, %w : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %h, %t : tensor<64x48xf32>, tensor<64x32xf32>
}

// RUN: overlap-opt %s --overlap-raise --overlap-lower-collectives --overlap-check-collectives -split-input-file -verify-diagnostics
// RUN: not overlap-opt %s --overlap-pipeline --remarks-filter=overlap -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPELINE

// A shard.all_to_all that overlap-raise does not fuse with the experts'
// matmul is lowered as one unsplit exchange, with overlap-raise's reason in
// both remarks; one that cannot be exchanged at all is an error that says
// why.

// Uneven tokens: 10 rows on 4 ranks cannot be split into equal blocks; the
// error says so and how to fix it (pad to a capacity).
shard.grid @ep(shape = 4)
func.func @uneven(%x: tensor<10x32xf32>, %w: tensor<32x48xf32>, %c: tensor<10x48xf32>) -> tensor<10x48xf32> {
  // expected-error @+1 {{'shard.all_to_all' op is not lowered by Overlap: dimension 0 (10) is not divisible by the group size 4: every rank must get an equal block (pad it to a multiple of the group size)}}
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<10x32xf32> -> tensor<10x32xf32>
  %h = linalg.matmul ins(%t, %w : tensor<10x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<10x48xf32>) -> tensor<10x48xf32>
  return %h : tensor<10x48xf32>
}
// Through overlap-pipeline: overlap-raise's remark, then the error.
// PIPELINE: remark: [Missed] not-raised | Category:overlap:overlap-raise | Function=uneven | Reason="not raised to a fused overlap op: dimension 0 of the exchanged tensor (10) is not divisible by the group size 4
// PIPELINE: error: 'shard.all_to_all' op is not lowered by Overlap: dimension 0 (10) is not divisible by the group size 4: {{.*}}(pad it to a multiple of the group size)

// -----

// Experts' combine with the dispatch axes.
shard.grid @ep(shape = 4)
func.func @combine_axes(%h: tensor<8x16x48xf32>, %w: tensor<8x48x32xf32>, %c: tensor<8x16x32xf32>) -> tensor<2x64x32xf32> {
  %y = linalg.batch_matmul ins(%h, %w : tensor<8x16x48xf32>, tensor<8x48x32xf32>)
                           outs(%c : tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 0 concat_axis = 1
      : tensor<8x16x32xf32> -> tensor<2x64x32xf32>
  return %z : tensor<2x64x32xf32>
}
// PIPELINE: remark: [Missed] not-overlapped | Category:overlap:overlap-lower-collectives | {{.*}}Reason="lowered as one unsplit all-to-all, not overlapped: the all-to-all has split_axis = 0 and concat_axis = 1; after a linalg.batch_matmul

// -----

// One expert per rank, split along rows but concatenated along columns.
shard.grid @ep(shape = 4)
func.func @dispatch_axes(%x: tensor<64x32xf32>, %w: tensor<128x48xf32>, %c: tensor<16x48xf32>) -> tensor<16x48xf32> {
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 1
      : tensor<64x32xf32> -> tensor<16x128xf32>
  %h = linalg.matmul ins(%t, %w : tensor<16x128xf32>, tensor<128x48xf32>)
                     outs(%c : tensor<16x48xf32>) -> tensor<16x48xf32>
  return %h : tensor<16x48xf32>
}
// PIPELINE: remark: [Missed] not-overlapped | Category:overlap:overlap-lower-collectives | {{.*}}Reason="lowered as one unsplit all-to-all, not overlapped: the all-to-all has split_axis = 0 and concat_axis = 1; with a linalg.matmul

// -----

// No matmul next to it: the exchanged tokens go to an elementwise op.
shard.grid @ep(shape = 4)
#id = affine_map<(i, j) -> (i, j)>
func.func @no_matmul(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xf32> -> tensor<64x32xf32>
  %e = tensor.empty() : tensor<64x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %n = arith.negf %in : f32
      linalg.yield %n : f32
  } -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}
// PIPELINE: remark: [Missed] not-overlapped | Category:overlap:overlap-lower-collectives | {{.*}}Reason="lowered as one unsplit all-to-all, not overlapped: it neither consumes the result of the experts' matmul

// -----

// The dispatched tokens feed the experts' matmul and are returned too.
shard.grid @ep(shape = 4)
func.func @other_users(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>, %c: tensor<64x48xf32>) -> (tensor<64x48xf32>, tensor<64x32xf32>) {
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xf32> -> tensor<64x32xf32>
  %h = linalg.matmul ins(%t, %w : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %h, %t : tensor<64x48xf32>, tensor<64x32xf32>
}
// PIPELINE: remark: [Missed] not-overlapped | Category:overlap:overlap-lower-collectives | {{.*}}Reason="lowered as one unsplit all-to-all, not overlapped: its result has other users than one matmul

// -----

// A combine that overlap-raise would fuse, when raise did not run.
shard.grid @ep(shape = 4)
func.func @not_raised_yet(%h: tensor<2x64x48xf32>, %w: tensor<2x48x32xf32>, %c: tensor<2x64x32xf32>) -> tensor<8x16x32xf32> {
  %y = linalg.batch_matmul ins(%h, %w : tensor<2x64x48xf32>, tensor<2x48x32xf32>)
                           outs(%c : tensor<2x64x32xf32>) -> tensor<2x64x32xf32>
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 1 concat_axis = 0
      : tensor<2x64x32xf32> -> tensor<8x16x32xf32>
  return %z : tensor<8x16x32xf32>
}
// Through overlap-pipeline it is raised and planned, and no error names it.
// PIPELINE-NOT: error: 'shard.all_to_all'
// PIPELINE: remark: [Passed] raised | Category:overlap:overlap-raise | Function=not_raised_yet | Remark="raised to overlap.matmul_all_to_all"
// PIPELINE-NEXT: %z = shard.all_to_all
// PIPELINE-NOT: error: 'shard.all_to_all'
// PIPELINE: remark: [Analysis] plan | Category:overlap:overlap-plan | Function=not_raised_yet
// PIPELINE-NOT: error: 'shard.all_to_all'

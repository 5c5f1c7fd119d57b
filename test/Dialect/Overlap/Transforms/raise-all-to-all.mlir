// RUN: overlap-opt %s --overlap-raise --remarks-filter=overlap -split-input-file -verify-diagnostics | FileCheck %s
// RUN: overlap-opt %s --overlap-raise --remarks-filter=overlap -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// overlap-raise, expert parallelism: a shard.all_to_all whose result is the
// tokens (left operand) of the experts' matmul becomes
// overlap.all_to_all_matmul (dispatch); one whose operand is the experts'
// matmul result becomes overlap.matmul_all_to_all (combine). One expert per
// rank: linalg.matmul, split_axis = concat_axis = 0. E experts per rank:
// linalg.batch_matmul, split_axis = 0 concat_axis = 1 for dispatch and
// split_axis = 1 concat_axis = 0 for combine. Every fusion is a passed
// remark; every all-to-all left alone is a missed remark saying why.

// The remarks' form, once per kind.
// REMARK: remark: [Passed] raised | Category:overlap:overlap-raise | Function=dispatch_one | Remark="raised to overlap.all_to_all_matmul"
// REMARK: remark: [Passed] raised | Category:overlap:overlap-raise | Function=combine_one | Remark="raised to overlap.matmul_all_to_all"
// REMARK: remark: [Missed] not-raised | Category:overlap:overlap-raise | Function=uneven | Reason="not raised to a fused overlap op: dimension 0 of the exchanged tensor (10) is not divisible by the group size 4

shard.grid @ep(shape = 4)

// One expert per rank, dispatch: the all-to-all and the matmul that takes
// its result as tokens become one op on the tokens before the exchange;
// the fill accumulator stays.
// CHECK-LABEL: func.func @dispatch_one
// CHECK-SAME: (%[[X:.*]]: tensor<64x32xf32>, %[[W:.*]]: tensor<32x48xf32>)
// CHECK: %[[C:.*]] = linalg.fill
// CHECK-NEXT: %[[R:.*]] = overlap.all_to_all_matmul %[[X]], %[[W]], %[[C]] on @ep grid_axes = [0] : tensor<64x32xf32>, tensor<32x48xf32>, tensor<64x48xf32> -> tensor<64x48xf32>
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: shard.all_to_all
// CHECK-NOT: linalg.matmul
func.func @dispatch_one(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>) -> tensor<64x48xf32> {
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xf32> -> tensor<64x32xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x48xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  // expected-remark @+1 {{raised to overlap.all_to_all_matmul}}
  %h = linalg.matmul ins(%t, %w : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %h : tensor<64x48xf32>
}

// One expert per rank, combine: the matmul whose result the all-to-all
// sends back becomes one op with it.
// CHECK-LABEL: func.func @combine_one
// CHECK-SAME: (%[[H:.*]]: tensor<64x48xbf16>, %[[W:.*]]: tensor<48x32xbf16>, %[[C:.*]]: tensor<64x32xf32>)
// CHECK-NEXT: %[[R:.*]] = overlap.matmul_all_to_all %[[H]], %[[W]], %[[C]] on @ep grid_axes = [0] : tensor<64x48xbf16>, tensor<48x32xbf16>, tensor<64x32xf32> -> tensor<64x32xf32>
// CHECK-NEXT: return %[[R]]
func.func @combine_one(%h: tensor<64x48xbf16>, %w: tensor<48x32xbf16>, %c: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %y = linalg.matmul ins(%h, %w : tensor<64x48xbf16>, tensor<48x32xbf16>)
                     outs(%c : tensor<64x32xf32>) -> tensor<64x32xf32>
  // expected-remark @+1 {{raised to overlap.matmul_all_to_all}}
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xf32> -> tensor<64x32xf32>
  return %z : tensor<64x32xf32>
}

// Two experts per rank, dispatch: (G E) x Cap x K tokens, split over the
// experts and concatenated along the tokens, feed a batch_matmul over this
// rank's experts.
// CHECK-LABEL: func.func @dispatch_experts
// CHECK-SAME: (%[[X:.*]]: tensor<8x16x32xbf16>, %[[W:.*]]: tensor<2x32x48xbf16>, %[[C:.*]]: tensor<2x64x48xf32>)
// CHECK-NEXT: %[[R:.*]] = overlap.all_to_all_matmul %[[X]], %[[W]], %[[C]] on @ep grid_axes = [0] : tensor<8x16x32xbf16>, tensor<2x32x48xbf16>, tensor<2x64x48xf32> -> tensor<2x64x48xf32>
// CHECK-NEXT: return %[[R]]
func.func @dispatch_experts(%x: tensor<8x16x32xbf16>, %w: tensor<2x32x48xbf16>, %c: tensor<2x64x48xf32>) -> tensor<2x64x48xf32> {
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 1
      : tensor<8x16x32xbf16> -> tensor<2x64x32xbf16>
  // expected-remark @+1 {{raised to overlap.all_to_all_matmul}}
  %h = linalg.batch_matmul ins(%t, %w : tensor<2x64x32xbf16>, tensor<2x32x48xbf16>)
                           outs(%c : tensor<2x64x48xf32>) -> tensor<2x64x48xf32>
  return %h : tensor<2x64x48xf32>
}

// Two experts per rank, combine: the mirror axes.
// CHECK-LABEL: func.func @combine_experts
// CHECK-SAME: (%[[H:.*]]: tensor<2x64x48xf16>, %[[W:.*]]: tensor<2x48x32xf16>, %[[C:.*]]: tensor<2x64x32xf16>)
// CHECK-NEXT: %[[R:.*]] = overlap.matmul_all_to_all %[[H]], %[[W]], %[[C]] on @ep grid_axes = [0] : tensor<2x64x48xf16>, tensor<2x48x32xf16>, tensor<2x64x32xf16> -> tensor<8x16x32xf16>
// CHECK-NEXT: return %[[R]]
func.func @combine_experts(%h: tensor<2x64x48xf16>, %w: tensor<2x48x32xf16>, %c: tensor<2x64x32xf16>) -> tensor<8x16x32xf16> {
  %y = linalg.batch_matmul ins(%h, %w : tensor<2x64x48xf16>, tensor<2x48x32xf16>)
                           outs(%c : tensor<2x64x32xf16>) -> tensor<2x64x32xf16>
  // expected-remark @+1 {{raised to overlap.matmul_all_to_all}}
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 1 concat_axis = 0
      : tensor<2x64x32xf16> -> tensor<8x16x32xf16>
  return %z : tensor<8x16x32xf16>
}

// An all-to-all between two expert matmuls takes the one that produced its
// operand (combine); the next matmul stays and reads the fused result.
// CHECK-LABEL: func.func @between_matmuls
// CHECK-SAME: (%[[X:.*]]: tensor<64x32xf32>, %[[W:.*]]: tensor<32x48xf32>, %[[C:.*]]: tensor<64x48xf32>, %[[W2:.*]]: tensor<48x16xf32>, %[[C2:.*]]: tensor<64x16xf32>)
// CHECK-NEXT: %[[R:.*]] = overlap.matmul_all_to_all %[[X]], %[[W]], %[[C]]
// CHECK-NEXT: %[[Y:.*]] = linalg.matmul ins(%[[R]], %[[W2]] : tensor<64x48xf32>, tensor<48x16xf32>) outs(%[[C2]] : tensor<64x16xf32>)
// CHECK-NEXT: return %[[Y]]
func.func @between_matmuls(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>, %c: tensor<64x48xf32>,
                           %w2: tensor<48x16xf32>, %c2: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %h = linalg.matmul ins(%x, %w : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  // expected-remark @+1 {{raised to overlap.matmul_all_to_all}}
  %t = shard.all_to_all %h on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x48xf32> -> tensor<64x48xf32>
  %y = linalg.matmul ins(%t, %w2 : tensor<64x48xf32>, tensor<48x16xf32>)
                     outs(%c2 : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}

// Between two batch_matmuls with the dispatch axes: the combine form does
// not fit, so the consumer takes it (dispatch), and the producer stays.
// CHECK-LABEL: func.func @between_batch_matmuls_dispatch
// CHECK: %[[H:.*]] = linalg.batch_matmul
// CHECK-NEXT: %[[R:.*]] = overlap.all_to_all_matmul %[[H]], %{{.*}}, %{{.*}} on @ep grid_axes = [0] : tensor<8x16x48xf32>, tensor<2x48x16xf32>, tensor<2x64x16xf32> -> tensor<2x64x16xf32>
// CHECK-NEXT: return %[[R]]
func.func @between_batch_matmuls_dispatch(%x: tensor<8x16x32xf32>, %w: tensor<8x32x48xf32>, %c: tensor<8x16x48xf32>,
                                          %w2: tensor<2x48x16xf32>, %c2: tensor<2x64x16xf32>) -> tensor<2x64x16xf32> {
  %h = linalg.batch_matmul ins(%x, %w : tensor<8x16x32xf32>, tensor<8x32x48xf32>)
                           outs(%c : tensor<8x16x48xf32>) -> tensor<8x16x48xf32>
  %t = shard.all_to_all %h on @ep grid_axes = [0] split_axis = 0 concat_axis = 1
      : tensor<8x16x48xf32> -> tensor<2x64x48xf32>
  // expected-remark @+1 {{raised to overlap.all_to_all_matmul}}
  %y = linalg.batch_matmul ins(%t, %w2 : tensor<2x64x48xf32>, tensor<2x48x16xf32>)
                           outs(%c2 : tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
  return %y : tensor<2x64x16xf32>
}

// -----

shard.grid @ep(shape = 4)

#id3 = affine_map<(e, i, j) -> (e, i, j)>

// A whole expert-parallel layer (examples/moe.mlir): dispatch, up-projection,
// ReLU, down-projection, combine. Both all-to-alls are raised, each with its
// own matmul; the ReLU between them stays.
// CHECK-LABEL: func.func @moe_layer
// CHECK-SAME: (%[[X:.*]]: tensor<8x64x64xf32>, %[[W1:.*]]: tensor<2x64x128xf32>, %[[W2:.*]]: tensor<2x128x64xf32>)
// CHECK: %[[C1:.*]] = linalg.fill
// CHECK-NEXT: %[[H:.*]] = overlap.all_to_all_matmul %[[X]], %[[W1]], %[[C1]] on @ep grid_axes = [0] : tensor<8x64x64xf32>, tensor<2x64x128xf32>, tensor<2x256x128xf32> -> tensor<2x256x128xf32>
// CHECK-NEXT: %[[A:.*]] = linalg.generic {{.*}} ins(%[[H]] : tensor<2x256x128xf32>)
// CHECK: %[[C2:.*]] = linalg.fill
// CHECK-NEXT: %[[Z:.*]] = overlap.matmul_all_to_all %[[A]], %[[W2]], %[[C2]] on @ep grid_axes = [0] : tensor<2x256x128xf32>, tensor<2x128x64xf32>, tensor<2x256x64xf32> -> tensor<8x64x64xf32>
// CHECK-NEXT: return %[[Z]]
// CHECK-NOT: shard.all_to_all
// CHECK-NOT: linalg.batch_matmul
func.func @moe_layer(%x: tensor<8x64x64xf32>, %w1: tensor<2x64x128xf32>,
                     %w2: tensor<2x128x64xf32>) -> tensor<8x64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 1
      : tensor<8x64x64xf32> -> tensor<2x256x64xf32>
  %e1 = tensor.empty() : tensor<2x256x128xf32>
  %c1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x256x128xf32>) -> tensor<2x256x128xf32>
  // expected-remark @+1 {{raised to overlap.all_to_all_matmul}}
  %h = linalg.batch_matmul ins(%t, %w1 : tensor<2x256x64xf32>, tensor<2x64x128xf32>)
                           outs(%c1 : tensor<2x256x128xf32>) -> tensor<2x256x128xf32>
  %a = linalg.generic {indexing_maps = [#id3, #id3],
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
  // expected-remark @+1 {{raised to overlap.matmul_all_to_all}}
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 1 concat_axis = 0
      : tensor<2x256x64xf32> -> tensor<8x64x64xf32>
  return %z : tensor<8x64x64xf32>
}

// -----

// The group is the product of the grid axes named, not the whole grid: 12
// tokens split over axis 1 (4 ranks) are raised; over both axes (8 ranks)
// they are not.
shard.grid @ep(shape = 2x4)

// CHECK-LABEL: func.func @axis_1
// CHECK: overlap.all_to_all_matmul %{{.*}} on @ep grid_axes = [1] : tensor<12x32xf32>
// CHECK-NOT: shard.all_to_all
func.func @axis_1(%x: tensor<12x32xf32>, %w: tensor<32x48xf32>, %c: tensor<12x48xf32>) -> tensor<12x48xf32> {
  %t = shard.all_to_all %x on @ep grid_axes = [1] split_axis = 0 concat_axis = 0
      : tensor<12x32xf32> -> tensor<12x32xf32>
  // expected-remark @+1 {{raised to overlap.all_to_all_matmul}}
  %h = linalg.matmul ins(%t, %w : tensor<12x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<12x48xf32>) -> tensor<12x48xf32>
  return %h : tensor<12x48xf32>
}

// CHECK-LABEL: func.func @both_axes
// CHECK: shard.all_to_all
// CHECK: linalg.matmul
func.func @both_axes(%x: tensor<12x32xf32>, %w: tensor<32x48xf32>, %c: tensor<12x48xf32>) -> tensor<12x48xf32> {
  // expected-remark @+1 {{not raised to a fused overlap op: dimension 0 of the exchanged tensor (12) is not divisible by the group size 8}}
  %t = shard.all_to_all %x on @ep grid_axes = [0, 1] split_axis = 0 concat_axis = 0
      : tensor<12x32xf32> -> tensor<12x32xf32>
  %h = linalg.matmul ins(%t, %w : tensor<12x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<12x48xf32>) -> tensor<12x48xf32>
  return %h : tensor<12x48xf32>
}

// -----

// Refusals: each leaves the IR alone and says why.

shard.grid @ep(shape = 4)

// Uneven tokens: 10 rows cannot be split into 4 equal blocks.
// CHECK-LABEL: func.func @uneven
// CHECK: shard.all_to_all
// CHECK: linalg.matmul
func.func @uneven(%x: tensor<10x32xf32>, %w: tensor<32x48xf32>, %c: tensor<10x48xf32>) -> tensor<10x48xf32> {
  // expected-remark @+1 {{not raised to a fused overlap op: dimension 0 of the exchanged tensor (10) is not divisible by the group size 4: every rank must send every rank an equal block (pad the tokens to a capacity that is a multiple of the group size)}}
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<10x32xf32> -> tensor<10x32xf32>
  %h = linalg.matmul ins(%t, %w : tensor<10x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<10x48xf32>) -> tensor<10x48xf32>
  return %h : tensor<10x48xf32>
}

// Combine with 2 experts per rank and 6 tokens per expert: the split axis
// (1) has 6 rows, not divisible by 4.
// CHECK-LABEL: func.func @uneven_combine
// CHECK: linalg.batch_matmul
// CHECK: shard.all_to_all
func.func @uneven_combine(%h: tensor<2x6x48xf32>, %w: tensor<2x48x32xf32>, %c: tensor<2x6x32xf32>) -> tensor<8x?x32xf32> {
  %y = linalg.batch_matmul ins(%h, %w : tensor<2x6x48xf32>, tensor<2x48x32xf32>)
                           outs(%c : tensor<2x6x32xf32>) -> tensor<2x6x32xf32>
  // expected-remark @+1 {{not raised to a fused overlap op: dimension 1 of the exchanged tensor (6) is not divisible by the group size 4}}
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 1 concat_axis = 0
      : tensor<2x6x32xf32> -> tensor<8x?x32xf32>
  return %z : tensor<8x?x32xf32>
}

// The dispatched tokens are also returned: the fused op would not produce
// them.
// CHECK-LABEL: func.func @dispatch_other_users
// CHECK: shard.all_to_all
// CHECK: linalg.matmul
func.func @dispatch_other_users(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>, %c: tensor<64x48xf32>) -> (tensor<64x48xf32>, tensor<64x32xf32>) {
  // expected-remark @+1 {{not raised to a fused overlap op: its result has other users than one matmul}}
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xf32> -> tensor<64x32xf32>
  %h = linalg.matmul ins(%t, %w : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %h, %t : tensor<64x48xf32>, tensor<64x32xf32>
}

// Two experts' matmuls take the same tokens; neither is fused.
// CHECK-LABEL: func.func @dispatch_two_matmuls
// CHECK: shard.all_to_all
// CHECK-COUNT-2: linalg.matmul
func.func @dispatch_two_matmuls(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>, %c: tensor<64x48xf32>) -> (tensor<64x48xf32>, tensor<64x48xf32>) {
  // expected-remark @+1 {{not raised to a fused overlap op: its result has other users than one matmul}}
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xf32> -> tensor<64x32xf32>
  %h = linalg.matmul ins(%t, %w : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  %g = linalg.matmul ins(%t, %w : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %h, %g : tensor<64x48xf32>, tensor<64x48xf32>
}

// The tokens are the right operand of one matmul and the left operand of
// another: the left use is found, and the other use refuses it.
// CHECK-LABEL: func.func @dispatch_left_and_right
// CHECK: shard.all_to_all
// CHECK-COUNT-2: linalg.matmul
func.func @dispatch_left_and_right(%x: tensor<32x32xf32>, %a: tensor<16x32xf32>, %c1: tensor<16x32xf32>, %c2: tensor<32x32xf32>) -> (tensor<16x32xf32>, tensor<32x32xf32>) {
  // expected-remark @+1 {{not raised to a fused overlap op: its result has other users than one matmul}}
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<32x32xf32> -> tensor<32x32xf32>
  %r = linalg.matmul ins(%a, %t : tensor<16x32xf32>, tensor<32x32xf32>)
                     outs(%c1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %l = linalg.matmul ins(%t, %x : tensor<32x32xf32>, tensor<32x32xf32>)
                     outs(%c2 : tensor<32x32xf32>) -> tensor<32x32xf32>
  return %r, %l : tensor<16x32xf32>, tensor<32x32xf32>
}

// CHECK-LABEL: func.func @combine_other_users
// CHECK: linalg.matmul
// CHECK: shard.all_to_all
func.func @combine_other_users(%h: tensor<64x48xf32>, %w: tensor<48x32xf32>, %c: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<64x32xf32>) {
  %y = linalg.matmul ins(%h, %w : tensor<64x48xf32>, tensor<48x32xf32>)
                     outs(%c : tensor<64x32xf32>) -> tensor<64x32xf32>
  // expected-remark @+1 {{not raised to a fused overlap op: the experts' matmul result has other users, which would need it before the all-to-all}}
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xf32> -> tensor<64x32xf32>
  return %z, %y : tensor<64x32xf32>, tensor<64x32xf32>
}

// The exchanged tensor is the matmul's right operand (weights), not its
// tokens.
// CHECK-LABEL: func.func @right_operand
// CHECK: shard.all_to_all
// CHECK: linalg.matmul
func.func @right_operand(%x: tensor<32x48xf32>, %a: tensor<64x32xf32>, %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  // expected-remark @+1 {{not raised to a fused overlap op: its result is not the left operand (tokens) of a linalg.matmul or linalg.batch_matmul}}
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<32x48xf32> -> tensor<32x48xf32>
  %h = linalg.matmul ins(%a, %t : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %h : tensor<64x48xf32>
}

// No matmul on either side.
// CHECK-LABEL: func.func @no_matmul
// CHECK: shard.all_to_all
func.func @no_matmul(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  // expected-remark @+1 {{not raised to a fused overlap op: it neither consumes the result of the experts' matmul (linalg.matmul or linalg.batch_matmul: combine) nor feeds its tokens to one (dispatch)}}
  %z = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xf32> -> tensor<64x32xf32>
  return %z : tensor<64x32xf32>
}

// One expert per rank exchanges whole rows: a split along rows that
// concatenates columns is not that.
// CHECK-LABEL: func.func @one_expert_axes
// CHECK: shard.all_to_all
// CHECK: linalg.matmul
func.func @one_expert_axes(%x: tensor<64x32xf32>, %w: tensor<128x48xf32>, %c: tensor<16x48xf32>) -> tensor<16x48xf32> {
  // expected-remark @+1 {{not raised to a fused overlap op: the all-to-all has split_axis = 0 and concat_axis = 1; with a linalg.matmul (one expert per rank) only split_axis = 0 concat_axis = 0 is handled}}
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 1
      : tensor<64x32xf32> -> tensor<16x128xf32>
  %h = linalg.matmul ins(%t, %w : tensor<16x128xf32>, tensor<128x48xf32>)
                     outs(%c : tensor<16x48xf32>) -> tensor<16x48xf32>
  return %h : tensor<16x48xf32>
}

// Dispatch with experts needs split_axis = 0 concat_axis = 1; the combine
// axes before a batch_matmul are refused.
// CHECK-LABEL: func.func @dispatch_axes
// CHECK: shard.all_to_all
// CHECK: linalg.batch_matmul
func.func @dispatch_axes(%x: tensor<2x64x32xf32>, %w: tensor<8x32x48xf32>, %c: tensor<8x16x48xf32>) -> tensor<8x16x48xf32> {
  // expected-remark @+1 {{not raised to a fused overlap op: the all-to-all has split_axis = 1 and concat_axis = 0; before a linalg.batch_matmul over experts only split_axis = 0 concat_axis = 1 (experts x tokens) is handled}}
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 1 concat_axis = 0
      : tensor<2x64x32xf32> -> tensor<8x16x32xf32>
  %h = linalg.batch_matmul ins(%t, %w : tensor<8x16x32xf32>, tensor<8x32x48xf32>)
                           outs(%c : tensor<8x16x48xf32>) -> tensor<8x16x48xf32>
  return %h : tensor<8x16x48xf32>
}

// Combine with experts needs split_axis = 1 concat_axis = 0.
// CHECK-LABEL: func.func @combine_axes
// CHECK: linalg.batch_matmul
// CHECK: shard.all_to_all
func.func @combine_axes(%h: tensor<2x64x48xf32>, %w: tensor<2x48x32xf32>, %c: tensor<2x64x32xf32>) -> tensor<2x256x8xf32> {
  %y = linalg.batch_matmul ins(%h, %w : tensor<2x64x48xf32>, tensor<2x48x32xf32>)
                           outs(%c : tensor<2x64x32xf32>) -> tensor<2x64x32xf32>
  // expected-remark @+1 {{not raised to a fused overlap op: the all-to-all has split_axis = 2 and concat_axis = 1; after a linalg.batch_matmul over experts only split_axis = 1 concat_axis = 0 is handled}}
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 2 concat_axis = 1
      : tensor<2x64x32xf32> -> tensor<2x256x8xf32>
  return %z : tensor<2x256x8xf32>
}

// A dynamic token count: the matmul that would take it has a dynamic M.
// CHECK-LABEL: func.func @dynamic_tokens
// CHECK: shard.all_to_all
// CHECK: linalg.matmul
func.func @dynamic_tokens(%x: tensor<?x32xf32>, %w: tensor<32x48xf32>, %c: tensor<?x48xf32>) -> tensor<?x48xf32> {
  // expected-remark @+1 {{not raised to a fused overlap op: a shape is dynamic; planning needs static M, N and K}}
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<?x32xf32> -> tensor<?x32xf32>
  %h = linalg.matmul ins(%t, %w : tensor<?x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<?x48xf32>) -> tensor<?x48xf32>
  return %h : tensor<?x48xf32>
}

// A 2-D contraction next to an all-to-all is normalized first (as next to
// the other collectives): weights stored [out, in] are transposed into a
// plain matmul, which is raised with the dispatch (JAX's `x @ w[0]` after
// an all_to_all is such a contraction in generic form).
// CHECK-LABEL: func.func @transposed_weights
// CHECK: %[[WT:.*]] = linalg.transpose ins(%{{.*}} : tensor<48x32xf32>)
// CHECK: overlap.all_to_all_matmul %{{.*}}, %[[WT]], %{{.*}} on @ep
func.func @transposed_weights(%x: tensor<64x32xf32>, %w: tensor<48x32xf32>, %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xf32> -> tensor<64x32xf32>
  // expected-remark @+1 {{raised to overlap.all_to_all_matmul}}
  %h = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%t, %w : tensor<64x32xf32>, tensor<48x32xf32>) outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %h : tensor<64x48xf32>
}

// A batch_matmul that broadcasts the weights over the batch (the form
// overlap-decompose emits) is user-defined too.
// CHECK-LABEL: func.func @broadcast_weights
// CHECK: shard.all_to_all
// CHECK: linalg.batch_matmul
func.func @broadcast_weights(%x: tensor<8x16x32xf32>, %w: tensor<32x48xf32>, %c: tensor<2x64x48xf32>) -> tensor<2x64x48xf32> {
  // expected-remark @+1 {{not raised to a fused overlap op: the matmul has user-defined (transposed or broadcast) indexing maps}}
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 1
      : tensor<8x16x32xf32> -> tensor<2x64x32xf32>
  %h = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%t, %w : tensor<2x64x32xf32>, tensor<32x48xf32>) outs(%c : tensor<2x64x48xf32>) -> tensor<2x64x48xf32>
  return %h : tensor<2x64x48xf32>
}

// CHECK-LABEL: func.func @integer
// CHECK: linalg.matmul
// CHECK: shard.all_to_all
func.func @integer(%h: tensor<64x48xi32>, %w: tensor<48x32xi32>, %c: tensor<64x32xi32>) -> tensor<64x32xi32> {
  %y = linalg.matmul ins(%h, %w : tensor<64x48xi32>, tensor<48x32xi32>)
                     outs(%c : tensor<64x32xi32>) -> tensor<64x32xi32>
  // expected-remark @+1 {{not raised to a fused overlap op: its element types are not supported (A and B: one of f16, bf16, f32; C: the same or f32)}}
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xi32> -> tensor<64x32xi32>
  return %z : tensor<64x32xi32>
}

// One matmul between two all-to-alls is fused once: the first all-to-all
// (dispatch) takes it, and the second is left with a remark that says so.
// CHECK-LABEL: func.func @one_matmul_two_exchanges
// CHECK: %[[R:.*]] = overlap.all_to_all_matmul
// CHECK-NEXT: shard.all_to_all %[[R]]
func.func @one_matmul_two_exchanges(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>, %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xf32> -> tensor<64x32xf32>
  // expected-remark @+1 {{raised to overlap.all_to_all_matmul}}
  %h = linalg.matmul ins(%t, %w : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  // expected-remark @+1 {{not raised to a fused overlap op: its operand is the result of an overlap.all_to_all_matmul: the experts' matmul between the two all-to-alls is fused with the dispatch already, and a matmul fuses with one collective (an activation or a second matmul between them gives each its own)}}
  %z = shard.all_to_all %h on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x48xf32> -> tensor<64x48xf32>
  return %z : tensor<64x48xf32>
}

// -----

shard.grid @dyn(shape = ?)

// CHECK-LABEL: func.func @dynamic_group
// CHECK: shard.all_to_all
// CHECK: linalg.matmul
func.func @dynamic_group(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>, %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  // expected-remark @+1 {{not raised to a fused overlap op: the group size of @dyn is not static}}
  %t = shard.all_to_all %x on @dyn grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<64x32xf32> -> tensor<64x32xf32>
  %h = linalg.matmul ins(%t, %w : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %h : tensor<64x48xf32>
}

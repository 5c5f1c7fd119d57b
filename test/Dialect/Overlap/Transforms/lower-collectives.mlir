// RUN: overlap-opt %s --overlap-lower-collectives | FileCheck %s
// RUN: overlap-opt %s --overlap-lower-collectives --remarks-filter=overlap -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: overlap-opt %s --overlap-lower-collectives | overlap-opt --overlap-check-collectives -o /dev/null

// Every shard collective overlap-raise left alone becomes one unsplit
// Overlap collective over the whole tensor, with transposes around it when
// it works along another axis than rows, and a missed remark that says it
// was not overlapped and why (overlap-raise's reason).

shard.grid @tp(shape = 4)
shard.grid @g2(shape = 2x2)

// REMARK: remark: [Missed] not-overlapped | Category:overlap:overlap-lower-collectives | Function=max | Reason="lowered as one unsplit all-reduce, not overlapped: the reduction is 'max'; only a sum distributes over the tiles of C + A*B"
// CHECK-LABEL: func.func @max
// CHECK: %[[M:.*]] = linalg.matmul
// CHECK-NEXT: %[[R:.*]] = overlap.all_reduce %[[M]] on @tp grid_axes = [0] reduction = <max> : tensor<256x32xf32> -> tensor<256x32xf32>
// CHECK-NEXT: return %[[R]]
func.func @max(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %m = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %r = shard.all_reduce %m on @tp grid_axes = [0] reduction = max : tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

// Along the sequence (dim 1): the sequence is moved to the front, gathered
// as rows, and moved back.
// REMARK: Function=gather_seq | Reason="lowered as one unsplit all-gather, not overlapped: its result is not the left operand of a linalg.matmul
// CHECK-LABEL: func.func @gather_seq
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<2x8x16xbf16>) outs(%{{.*}} : tensor<8x2x16xbf16>) permutation = [1, 0, 2]
// CHECK-NEXT: %[[G:.*]] = overlap.all_gather %[[T]] on @tp grid_axes = [0] : tensor<8x2x16xbf16> -> tensor<32x2x16xbf16>
// CHECK: %[[B:.*]] = linalg.transpose ins(%[[G]] : tensor<32x2x16xbf16>) outs(%{{.*}} : tensor<2x32x16xbf16>) permutation = [1, 0, 2]
// CHECK-NEXT: return %[[B]]
// CHECK-NOT: shard.all_gather
func.func @gather_seq(%x: tensor<2x8x16xbf16>) -> tensor<2x32x16xbf16> {
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 1 : tensor<2x8x16xbf16> -> tensor<2x32x16xbf16>
  return %g : tensor<2x32x16xbf16>
}

// REMARK: Function=scatter_seq | Reason="lowered as one unsplit reduce-scatter, not overlapped: its operand is not the result of a linalg.matmul
// CHECK-LABEL: func.func @scatter_seq
// CHECK: linalg.transpose {{.*}} permutation = [1, 0, 2]
// CHECK-NEXT: overlap.reduce_scatter %{{.*}} on @tp grid_axes = [0] : tensor<8x2x16xf32> -> tensor<2x2x16xf32>
// CHECK: linalg.transpose {{.*}} permutation = [1, 0, 2]
func.func @scatter_seq(%x: tensor<2x8x16xf32>) -> tensor<2x2x16xf32> {
  %s = shard.reduce_scatter %x on @tp grid_axes = [0] scatter_axis = 1 : tensor<2x8x16xf32> -> tensor<2x2x16xf32>
  return %s : tensor<2x2x16xf32>
}

// Along rows over two grid axes: no transpose.
// CHECK-LABEL: func.func @scatter_rows
// CHECK-NOT: linalg.transpose
// CHECK: overlap.reduce_scatter %arg0 on @g2 grid_axes = [1, 0] : tensor<8x16xf32> -> tensor<2x16xf32>
func.func @scatter_rows(%x: tensor<8x16xf32>) -> tensor<2x16xf32> {
  %s = shard.reduce_scatter %x on @g2 grid_axes = [1, 0] scatter_axis = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  return %s : tensor<2x16xf32>
}

// Split the sequence, concatenate the batch: the split axis leads, the row
// blocks are exchanged, and the four received blocks are laid side by side
// along dim 0 in rank order.
// CHECK-LABEL: func.func @exchange
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<2x8x4xf32>) {{.*}} permutation = [1, 0, 2]
// CHECK-NEXT: %[[X:.*]] = overlap.all_to_all %[[T]] on @tp grid_axes = [0] : tensor<8x2x4xf32> -> tensor<8x2x4xf32>
// CHECK-NEXT: %[[E:.*]] = tensor.expand_shape %[[X]] {{\[}}[0, 1], [2], [3]] output_shape [4, 2, 2, 4]
// CHECK: %[[L:.*]] = linalg.transpose ins(%[[E]] : tensor<4x2x2x4xf32>) {{.*}} permutation = [0, 2, 1, 3]
// CHECK-NEXT: tensor.collapse_shape %[[L]] {{\[}}[0, 1], [2], [3]] : tensor<4x2x2x4xf32> into tensor<8x2x4xf32>
func.func @exchange(%x: tensor<2x8x4xf32>) -> tensor<8x2x4xf32> {
  %y = shard.all_to_all %x on @tp grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x8x4xf32> -> tensor<8x2x4xf32>
  return %y : tensor<8x2x4xf32>
}

// all_slice is a local slice at the group rank's offset; no remark.
// REMARK-NOT: Function=slice
// CHECK-LABEL: func.func @slice
// CHECK: %[[I:.*]] = shard.process_multi_index on @tp axes = [0] : index
// CHECK: tensor.extract_slice %arg0[0, 0, %{{.*}}] [2, 8, 1] [1, 1, 1] : tensor<2x8x4xf32> to tensor<2x8x1xf32>
// CHECK-NOT: shard.all_slice
func.func @slice(%x: tensor<2x8x4xf32>) -> tensor<2x8x1xf32> {
  %y = shard.all_slice %x on @tp grid_axes = [0] slice_axis = 2 : tensor<2x8x4xf32> -> tensor<2x8x1xf32>
  return %y : tensor<2x8x1xf32>
}

// bf16 in, f32 out: converted first, so the sum runs in f32.
// CHECK-LABEL: func.func @widen
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<16xbf16>) outs(%{{.*}} : tensor<16xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: overlap.all_reduce %[[W]] on @tp grid_axes = [0] : tensor<16xf32> -> tensor<16xf32>
func.func @widen(%x: tensor<16xbf16>) -> tensor<16xf32> {
  %y = shard.all_reduce %x on @tp grid_axes = [0] : tensor<16xbf16> -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// i1 moves as bytes: zero-extended, gathered as i8, truncated back; here,
// after overlap-raise (which moved the conversions that
// overlap-expand-collectives once put around a gather back across it),
// with a dynamic size too.
// CHECK-LABEL: func.func @booleans
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<?x2xi1>) outs(%{{.*}} : tensor<?x2xi8>)
// CHECK: arith.extui %{{.*}} : i1 to i8
// CHECK: %[[G:.*]] = overlap.all_gather %[[X]] into %{{.*}} on @tp grid_axes = [0] : tensor<?x2xi8>, tensor<?x2xi8> -> tensor<?x2xi8>
// CHECK: linalg.generic {{.*}} ins(%[[G]] : tensor<?x2xi8>) outs(%{{.*}} : tensor<?x2xi1>)
// CHECK: arith.trunci %{{.*}} : i8 to i1
// CHECK-NOT: shard.all_gather
// CHECK: return
func.func @booleans(%x: tensor<?x2xi1>) -> tensor<?x2xi1> {
  %r = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<?x2xi1> -> tensor<?x2xi1>
  return %r : tensor<?x2xi1>
}

// A collective of a strided slice (`lax.psum(v[:, :2])`) is one call on one
// contiguous buffer: the slice is copied into one first. A slice that is
// one block already (whole rows, or one row's run) is not copied.
// CHECK-LABEL: func.func @strided_slice
// CHECK: %[[S:.*]] = tensor.extract_slice %{{.*}}[0, 0] [8, 2] [1, 1]
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8x2xf32>
// CHECK: %[[C:.*]] = linalg.copy ins(%[[S]] : tensor<8x2xf32>) outs(%[[E]] : tensor<8x2xf32>)
// CHECK: overlap.all_reduce %[[C]]
// CHECK: %[[R:.*]] = tensor.extract_slice %{{.*}}[2, 0] [4, 8] [1, 1]
// CHECK-NOT: linalg.copy
// CHECK: overlap.all_reduce %[[R]]
// CHECK: %[[T:.*]] = tensor.extract_slice %{{.*}}[3, 2] [1, 4] [1, 1]
// CHECK-NOT: linalg.copy
// CHECK: overlap.all_reduce %[[T]]
// CHECK: return
func.func @strided_slice(%v: tensor<8x8xf32>) -> (tensor<8x2xf32>, tensor<4x8xf32>, tensor<1x4xf32>) {
  %s = tensor.extract_slice %v[0, 0] [8, 2] [1, 1] : tensor<8x8xf32> to tensor<8x2xf32>
  %a = shard.all_reduce %s on @tp grid_axes = [0] : tensor<8x2xf32> -> tensor<8x2xf32>
  %r = tensor.extract_slice %v[2, 0] [4, 8] [1, 1] : tensor<8x8xf32> to tensor<4x8xf32>
  %b = shard.all_reduce %r on @tp grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
  %t = tensor.extract_slice %v[3, 2] [1, 4] [1, 1] : tensor<8x8xf32> to tensor<1x4xf32>
  %c = shard.all_reduce %t on @tp grid_axes = [0] : tensor<1x4xf32> -> tensor<1x4xf32>
  return %a, %b, %c : tensor<8x2xf32>, tensor<4x8xf32>, tensor<1x4xf32>
}

// The matmul forms frontends write, next to their collectives: PyTorch-
// layout [out, in] weights, [batch, seq, hidden] activations as a
// linalg.generic, linalg.batch_matmul with a broadcast weight or
// linalg.contract, Megatron's [seq, batch, hidden] collapsed to rows.
// overlap-raise normalizes each to the textbook pair and overlaps it; the
// forms it cannot (a gather collapsed along a strided axis by hand before
// a 2-D matmul) compile with the collective unsplit and a remark that says
// why. A cast before the
// collective is rounded per tile; one gather feeding two matmuls is fused
// once, with the weights side by side; an elementwise op after a gather
// (no wider than its input) moves before it.
//
// Each entry, split into tiles, is compared on 4 host ranks with the same
// entry of Inputs/frontend-forms-textbook.mlir, written by hand in the
// textbook form (weights transposed, activations flattened explicitly),
// compiled unsplit: the new normalization is not on the reference's path.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: overlap-opt %s --overlap-pipeline --remarks-filter=overlap -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: for e in torch_rowpar bsh_generic bmm_scatter seq_gather_contract sbh_gather_collapse seq_scatter_strided seq_gather_strided cast_before_psum cast_before_scatter gather_two_matmuls scale_after_gather seq_gather_strided_contract; do overlap-compile %s --entry $e --strategy uniform:2 --emit=so -o %t/$e.so && overlap-compile %S/Inputs/frontend-forms-textbook.mlir --entry $e --strategy none --emit=so -o %t/$e.ref.so && overlap-exec %t/$e.so --ref %t/$e.ref.so --ranks 4 | tail -1 || echo "FAILED $e"; done 2>&1 | FileCheck %s
// RUN: overlap-run --ranks 4 --entry bsh_generic --strategy auto %s | FileCheck %s --check-prefix=AUTO
// The check can fail: a generic whose body squares A is not a matmul.
// RUN: sed -e 's/%m = arith.mulf %a32, %b32 : f32/%m = arith.mulf %a32, %a32 : f32/' %s > %t/wrong.mlir
// RUN: overlap-compile %t/wrong.mlir --entry bsh_generic --strategy uniform:2 --emit=so -o %t/wrong.so
// RUN: not overlap-exec %t/wrong.so --ref %t/bsh_generic.ref.so --ranks 4 | FileCheck %s --check-prefix=WRONG

// REMARK-DAG: Function=torch_rowpar | Remark="raised to overlap.matmul_all_reduce"
// REMARK-DAG: Function=bsh_generic | Remark="raised to overlap.matmul_all_reduce"
// REMARK-DAG: Function=bmm_scatter | Remark="raised to overlap.matmul_reduce_scatter"
// REMARK-DAG: Function=seq_gather_contract | Remark="raised to overlap.all_gather_matmul"
// REMARK-DAG: Function=sbh_gather_collapse | Remark="raised to overlap.all_gather_matmul"
// REMARK-DAG: Function=torch_rowpar | Remark="tiles [
// REMARK-DAG: Function=bsh_generic | Remark="tiles [
// REMARK-DAG: Function=seq_scatter_strided | Remark="raised to overlap.matmul_reduce_scatter"
// REMARK-DAG: Function=seq_gather_strided_contract | Remark="raised to overlap.all_gather_matmul"
// REMARK-DAG: Function=seq_gather_strided | Reason="lowered as one unsplit all-gather, not overlapped: its result reaches a matmul reshaped to tensor<256x64xf32>, and the gathered blocks are strided
// REMARK-DAG: Function=cast_before_psum | Remark="raised to overlap.matmul_all_reduce"
// REMARK-DAG: Function=cast_before_scatter | Remark="raised to overlap.matmul_reduce_scatter"
// REMARK-DAG: Function=gather_two_matmuls | Remark="merged 2 matmuls of one gathered operand into one (weights side by side along N, in place of the first), so the gather is overlapped once for all of them"
// REMARK-DAG: Function=gather_two_matmuls | Remark="raised to overlap.all_gather_matmul"
// REMARK-DAG: Function=scale_after_gather | Remark="raised to overlap.all_gather_matmul"

// CHECK-COUNT-12: OK
// CHECK-NOT: FAILED
// AUTO: bit-identical: yes
// WRONG: MISMATCH

shard.grid @tp(shape = 4)

// Row-parallel linear, PyTorch-layout weight [out, in] (matmul with a
// transposed B map), f32.
func.func @torch_rowpar(%x: tensor<256x64xf32>, %w: tensor<32x64xf32>) -> tensor<256x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<256x64xf32>, tensor<32x64xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

// [batch, seq, hidden] bf16 activations, torch-layout bf16 weight, f32
// accumulation, as a linalg.generic; all-reduce.
func.func @bsh_generic(%x: tensor<2x128x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<2x128x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x128x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<2x128x32xf32>) -> tensor<2x128x32xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (n, k)>, affine_map<(b, s, n, k) -> (b, s, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<2x128x64xbf16>, tensor<32x64xbf16>) outs(%c : tensor<2x128x32xf32>) {
    ^bb0(%a: bf16, %b: bf16, %acc: f32):
      %a32 = arith.extf %a : bf16 to f32
      %b32 = arith.extf %b : bf16 to f32
      %m = arith.mulf %a32, %b32 : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
  } -> tensor<2x128x32xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<2x128x32xf32> -> tensor<2x128x32xf32>
  return %r : tensor<2x128x32xf32>
}

// batch_matmul with a broadcast weight, reduce-scatter along the batch.
func.func @bmm_scatter(%x: tensor<8x32x64xf32>, %w: tensor<64x32xf32>) -> tensor<2x32x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32x32xf32>) -> tensor<8x32x32xf32>
  %p = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%x, %w : tensor<8x32x64xf32>, tensor<64x32xf32>) outs(%c : tensor<8x32x32xf32>) -> tensor<8x32x32xf32>
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 0 : tensor<8x32x32xf32> -> tensor<2x32x32xf32>
  return %r : tensor<2x32x32xf32>
}

// Sequence-parallel input [1, s/G, k] gathered along the sequence, then a
// linalg.contract with a torch-layout weight.
func.func @seq_gather_contract(%x: tensor<1x64x64xf32>, %w: tensor<32x64xf32>) -> tensor<1x256x32xf32> {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 1 : tensor<1x64x64xf32> -> tensor<1x256x64xf32>
  %e = tensor.empty() : tensor<1x256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1x256x32xf32>) -> tensor<1x256x32xf32>
  %p = linalg.contract indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (n, k)>, affine_map<(b, s, n, k) -> (b, s, n)>]
      ins(%g, %w : tensor<1x256x64xf32>, tensor<32x64xf32>) outs(%c : tensor<1x256x32xf32>) -> tensor<1x256x32xf32>
  return %p : tensor<1x256x32xf32>
}

// Megatron's [seq, batch, hidden]: gathered along the sequence (dim 0),
// collapsed to rows, then a 2-D matmul.
func.func @sbh_gather_collapse(%x: tensor<32x2x64xf32>, %w: tensor<64x32xf32>) -> tensor<256x32xf32> {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<32x2x64xf32> -> tensor<128x2x64xf32>
  %rows = tensor.collapse_shape %g [[0, 1], [2]] : tensor<128x2x64xf32> into tensor<256x64xf32>
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%rows, %w : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  return %p : tensor<256x32xf32>
}

// Reduce-scatter along the sequence of [b, s, h] with b > 1: the blocks
// are strided in the [b * s] rows, so the activations are transposed to
// [s, b, h] first (and the result back): fused and overlapped.
func.func @seq_scatter_strided(%x: tensor<2x128x64xf32>, %w: tensor<64x32xf32>) -> tensor<2x32x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x128x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<2x128x32xf32>) -> tensor<2x128x32xf32>
  %p = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%x, %w : tensor<2x128x64xf32>, tensor<64x32xf32>) outs(%c : tensor<2x128x32xf32>) -> tensor<2x128x32xf32>
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 1 : tensor<2x128x32xf32> -> tensor<2x32x32xf32>
  return %r : tensor<2x32x32xf32>
}

// All-gather along the sequence of [b, s, k] with b > 1, then the
// flattened rows: the gathered blocks are strided in the rows, so the
// gather is lowered unsplit (not overlapped).
func.func @seq_gather_strided(%x: tensor<2x32x64xf32>, %w: tensor<64x32xf32>) -> tensor<256x32xf32> {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 1 : tensor<2x32x64xf32> -> tensor<2x128x64xf32>
  %rows = tensor.collapse_shape %g [[0, 1], [2]] : tensor<2x128x64xf32> into tensor<256x64xf32>
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%rows, %w : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  return %p : tensor<256x32xf32>
}

// A cast to bf16 between the matmul and its all-reduce (JAX's psum of a
// bf16 product): fused, each tile's f32 rows rounded before its all-reduce
// in bf16.
func.func @cast_before_psum(%x: tensor<256x64xbf16>, %w: tensor<64x32xbf16>) -> tensor<256x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<256x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %eh = tensor.empty() : tensor<256x32xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<256x32xf32>) outs(%eh : tensor<256x32xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<256x32xbf16>
  %r = shard.all_reduce %h on @tp grid_axes = [0] : tensor<256x32xbf16> -> tensor<256x32xbf16>
  return %r : tensor<256x32xbf16>
}

// One gather feeding two matmuls (gate and up projections): one matmul of
// the weights side by side, the gather fused once.
func.func @gather_two_matmuls(%x: tensor<64x64xf32>, %wg: tensor<64x32xf32>, %wu: tensor<64x32xf32>) -> (tensor<256x32xf32>, tensor<256x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xf32> -> tensor<256x64xf32>
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %pg = linalg.matmul ins(%g, %wg : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %pu = linalg.matmul ins(%g, %wu : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  return %pg, %pu : tensor<256x32xf32>, tensor<256x32xf32>
}

// The same before a reduce-scatter.
func.func @cast_before_scatter(%x: tensor<256x64xbf16>, %w: tensor<64x32xbf16>) -> tensor<64x32xbf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<256x64xbf16>, tensor<64x32xbf16>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  %eh = tensor.empty() : tensor<256x32xbf16>
  %h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<256x32xf32>) outs(%eh : tensor<256x32xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
  } -> tensor<256x32xbf16>
  %r = shard.reduce_scatter %h on @tp grid_axes = [0] scatter_axis = 0 : tensor<256x32xbf16> -> tensor<64x32xbf16>
  return %r : tensor<64x32xbf16>
}

// A scale between the all-gather and its matmul (a prologue): moved before
// the gather (each rank scales its own rows), so the gather meets the
// matmul and is overlapped.
func.func @scale_after_gather(%x: tensor<64x64xf32>, %w: tensor<64x32xf32>) -> tensor<256x32xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 0 : tensor<64x64xf32> -> tensor<256x64xf32>
  %es = tensor.empty() : tensor<256x64xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<256x64xf32>) outs(%es : tensor<256x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %half : f32
      linalg.yield %m : f32
  } -> tensor<256x64xf32>
  %e = tensor.empty() : tensor<256x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<256x32xf32>) -> tensor<256x32xf32>
  %p = linalg.matmul ins(%s, %w : tensor<256x64xf32>, tensor<64x32xf32>) outs(%c : tensor<256x32xf32>) -> tensor<256x32xf32>
  return %p : tensor<256x32xf32>
}

// All-gather along the sequence of [b, s, h] with b > 1 feeding a
// contraction: transposed to [s, b, h] so the gathered blocks are whole
// rows, fused, and the product transposed back.
func.func @seq_gather_strided_contract(%x: tensor<2x32x64xf32>, %w: tensor<32x64xf32>) -> tensor<2x128x32xf32> {
  %zero = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 1 : tensor<2x32x64xf32> -> tensor<2x128x64xf32>
  %e = tensor.empty() : tensor<2x128x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<2x128x32xf32>) -> tensor<2x128x32xf32>
  %p = linalg.contract indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (n, k)>, affine_map<(b, s, n, k) -> (b, s, n)>]
      ins(%g, %w : tensor<2x128x64xf32>, tensor<32x64xf32>) outs(%c : tensor<2x128x32xf32>) -> tensor<2x128x32xf32>
  return %p : tensor<2x128x32xf32>
}

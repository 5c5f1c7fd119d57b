// Collectives with no matmul to overlap (overlap-lower-collectives): each
// lowers as one unsplit runtime collective, and is checked without any
// reference built by Overlap. Every rank builds its input from its rank,
// x_r[i, j, k] = 1000 r + 100 i + 10 j + k (exact in f32), runs one
// collective and returns the result minus the value the collective's
// definition gives, computed in the program from the indices alone. Each
// entry must return exact zeros on 4 host ranks: it is compared with
// Inputs/unfused-collectives-zeros.mlir, whose entries return zeros.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: for e in gather_seq scatter_seq reduce_max reduce_avg exchange_seq exchange_hidden slice_hidden gather_bf16 reduce_bf16_f32 gather_2d; do overlap-compile %s --entry $e --emit=so -o %t/$e.so && overlap-compile %S/Inputs/unfused-collectives-zeros.mlir --entry $e --emit=so -o %t/$e.zeros.so && overlap-exec %t/$e.so --ref %t/$e.zeros.so --ranks 4 || echo "FAILED $e"; done 2>&1 | FileCheck %s
// The JIT path (overlap-run) gives the same zeros as the AOT libraries.
// RUN: overlap-run --ranks 4 --entry gather_bf16 --remarks-filter=overlap %s 2>&1 | FileCheck %s --check-prefix=JIT
// The check can fail: rank r's data scaled by 1001 instead of 1000.
// RUN: sed -e 's/%xvc0 = arith.constant 1000/%xvc0 = arith.constant 1001/' %s > %t/wrong.mlir
// RUN: overlap-compile %t/wrong.mlir --entry gather_seq --emit=so -o %t/wrong.so
// RUN: not overlap-exec %t/wrong.so --ref %t/gather_seq.zeros.so --ranks 4 | FileCheck %s --check-prefix=WRONG

// CHECK-COUNT-10: OK
// CHECK-NOT: FAILED
// CHECK-NOT: MISMATCH
// JIT: remark: [Missed] not-overlapped | Category:overlap:overlap-lower-collectives | Function=gather_bf16 | Reason="lowered as one unsplit all-gather, not overlapped
// JIT: bit-identical: yes
// WRONG: MISMATCH

shard.grid @tp(shape = 4)
shard.grid @g2(shape = 2x2)

// all-gather along the sequence (dim 1) of [b, s, h]: element (i, j, k)
// is rank j/8's (i, j%8, k).
func.func @gather_seq(%arg: tensor<2x8x4xf32>) -> tensor<2x32x4xf32> {
  %r = shard.process_linear_index on @tp : index
  %k2 = arith.constant 2 : index
  %k4 = arith.constant 4 : index
  %k8 = arith.constant 8 : index
  %xe = tensor.empty() : tensor<2x8x4xf32>
  %xf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%xe : tensor<2x8x4xf32>) {
    ^bb0(%out: f32):
      %x0 = linalg.index 0 : index
      %x1 = linalg.index 1 : index
      %x2 = linalg.index 2 : index
      %xvc0 = arith.constant 1000 : index
      %xvt0 = arith.muli %xvc0, %r : index
      %xvc1 = arith.constant 100 : index
      %xvt1 = arith.muli %xvc1, %x0 : index
      %xva1 = arith.addi %xvt0, %xvt1 : index
      %xvc2 = arith.constant 10 : index
      %xvt2 = arith.muli %xvc2, %x1 : index
      %xva2 = arith.addi %xva1, %xvt2 : index
      %xvc3 = arith.constant 1 : index
      %xvt3 = arith.muli %xvc3, %x2 : index
      %xva3 = arith.addi %xva2, %xvt3 : index
      %xvi = arith.index_cast %xva3 : index to i64
      %xv = arith.sitofp %xvi : i64 to f32
      linalg.yield %xv : f32
  } -> tensor<2x8x4xf32>
  %y = shard.all_gather %xf on @tp grid_axes = [0] gather_axis = 1 : tensor<2x8x4xf32> -> tensor<2x32x4xf32>
  %qe = tensor.empty() : tensor<2x32x4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<2x32x4xf32>) outs(%qe : tensor<2x32x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %q0 = linalg.index 0 : index
      %q1 = linalg.index 1 : index
      %q2 = linalg.index 2 : index
      %g = arith.divui %q1, %k8 : index
      %jl = arith.remui %q1, %k8 : index
      %evc0 = arith.constant 1000 : index
      %evt0 = arith.muli %evc0, %g : index
      %evc1 = arith.constant 100 : index
      %evt1 = arith.muli %evc1, %q0 : index
      %eva1 = arith.addi %evt0, %evt1 : index
      %evc2 = arith.constant 10 : index
      %evt2 = arith.muli %evc2, %jl : index
      %eva2 = arith.addi %eva1, %evt2 : index
      %evc3 = arith.constant 1 : index
      %evt3 = arith.muli %evc3, %q2 : index
      %eva3 = arith.addi %eva2, %evt3 : index
      %evi = arith.index_cast %eva3 : index to i64
      %ev = arith.sitofp %evi : i64 to f32
      %qs = arith.subf %in, %ev : f32
      linalg.yield %qs : f32
  } -> tensor<2x32x4xf32>
  return %q : tensor<2x32x4xf32>
}

// reduce-scatter (sum) along the sequence: rank r keeps rows 2r, 2r+1 of
// the sum over ranks, 6000 + 4 (100 i + 10 (2r + j) + k).
func.func @scatter_seq(%arg: tensor<2x8x4xf32>) -> tensor<2x2x4xf32> {
  %r = shard.process_linear_index on @tp : index
  %k2 = arith.constant 2 : index
  %k4 = arith.constant 4 : index
  %k8 = arith.constant 8 : index
  %xe = tensor.empty() : tensor<2x8x4xf32>
  %xf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%xe : tensor<2x8x4xf32>) {
    ^bb0(%out: f32):
      %x0 = linalg.index 0 : index
      %x1 = linalg.index 1 : index
      %x2 = linalg.index 2 : index
      %xvc0 = arith.constant 1000 : index
      %xvt0 = arith.muli %xvc0, %r : index
      %xvc1 = arith.constant 100 : index
      %xvt1 = arith.muli %xvc1, %x0 : index
      %xva1 = arith.addi %xvt0, %xvt1 : index
      %xvc2 = arith.constant 10 : index
      %xvt2 = arith.muli %xvc2, %x1 : index
      %xva2 = arith.addi %xva1, %xvt2 : index
      %xvc3 = arith.constant 1 : index
      %xvt3 = arith.muli %xvc3, %x2 : index
      %xva3 = arith.addi %xva2, %xvt3 : index
      %xvi = arith.index_cast %xva3 : index to i64
      %xv = arith.sitofp %xvi : i64 to f32
      linalg.yield %xv : f32
  } -> tensor<2x8x4xf32>
  %y = shard.reduce_scatter %xf on @tp grid_axes = [0] scatter_axis = 1 : tensor<2x8x4xf32> -> tensor<2x2x4xf32>
  %qe = tensor.empty() : tensor<2x2x4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<2x2x4xf32>) outs(%qe : tensor<2x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %q0 = linalg.index 0 : index
      %q1 = linalg.index 1 : index
      %q2 = linalg.index 2 : index
      %six = arith.constant 6000 : index
      %evc0 = arith.constant 1 : index
      %evt0 = arith.muli %evc0, %six : index
      %evc1 = arith.constant 400 : index
      %evt1 = arith.muli %evc1, %q0 : index
      %eva1 = arith.addi %evt0, %evt1 : index
      %evc2 = arith.constant 80 : index
      %evt2 = arith.muli %evc2, %r : index
      %eva2 = arith.addi %eva1, %evt2 : index
      %evc3 = arith.constant 40 : index
      %evt3 = arith.muli %evc3, %q1 : index
      %eva3 = arith.addi %eva2, %evt3 : index
      %evc4 = arith.constant 4 : index
      %evt4 = arith.muli %evc4, %q2 : index
      %eva4 = arith.addi %eva3, %evt4 : index
      %evi = arith.index_cast %eva4 : index to i64
      %ev = arith.sitofp %evi : i64 to f32
      %qs = arith.subf %in, %ev : f32
      linalg.yield %qs : f32
  } -> tensor<2x2x4xf32>
  return %q : tensor<2x2x4xf32>
}

// all-reduce (max), no matmul anywhere: rank 3's values.
func.func @reduce_max(%arg: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %r = shard.process_linear_index on @tp : index
  %k2 = arith.constant 2 : index
  %k4 = arith.constant 4 : index
  %k8 = arith.constant 8 : index
  %xe = tensor.empty() : tensor<2x8x4xf32>
  %xf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%xe : tensor<2x8x4xf32>) {
    ^bb0(%out: f32):
      %x0 = linalg.index 0 : index
      %x1 = linalg.index 1 : index
      %x2 = linalg.index 2 : index
      %xvc0 = arith.constant 1000 : index
      %xvt0 = arith.muli %xvc0, %r : index
      %xvc1 = arith.constant 100 : index
      %xvt1 = arith.muli %xvc1, %x0 : index
      %xva1 = arith.addi %xvt0, %xvt1 : index
      %xvc2 = arith.constant 10 : index
      %xvt2 = arith.muli %xvc2, %x1 : index
      %xva2 = arith.addi %xva1, %xvt2 : index
      %xvc3 = arith.constant 1 : index
      %xvt3 = arith.muli %xvc3, %x2 : index
      %xva3 = arith.addi %xva2, %xvt3 : index
      %xvi = arith.index_cast %xva3 : index to i64
      %xv = arith.sitofp %xvi : i64 to f32
      linalg.yield %xv : f32
  } -> tensor<2x8x4xf32>
  %y = shard.all_reduce %xf on @tp grid_axes = [0] reduction = max : tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  %qe = tensor.empty() : tensor<2x8x4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<2x8x4xf32>) outs(%qe : tensor<2x8x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %q0 = linalg.index 0 : index
      %q1 = linalg.index 1 : index
      %q2 = linalg.index 2 : index
      %three = arith.constant 3 : index
      %evc0 = arith.constant 1000 : index
      %evt0 = arith.muli %evc0, %three : index
      %evc1 = arith.constant 100 : index
      %evt1 = arith.muli %evc1, %q0 : index
      %eva1 = arith.addi %evt0, %evt1 : index
      %evc2 = arith.constant 10 : index
      %evt2 = arith.muli %evc2, %q1 : index
      %eva2 = arith.addi %eva1, %evt2 : index
      %evc3 = arith.constant 1 : index
      %evt3 = arith.muli %evc3, %q2 : index
      %eva3 = arith.addi %eva2, %evt3 : index
      %evi = arith.index_cast %eva3 : index to i64
      %ev = arith.sitofp %evi : i64 to f32
      %qs = arith.subf %in, %ev : f32
      linalg.yield %qs : f32
  } -> tensor<2x8x4xf32>
  return %q : tensor<2x8x4xf32>
}

// all-reduce (average): (sum over ranks) / 4 = 1500 + 100 i + 10 j + k.
func.func @reduce_avg(%arg: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %r = shard.process_linear_index on @tp : index
  %k2 = arith.constant 2 : index
  %k4 = arith.constant 4 : index
  %k8 = arith.constant 8 : index
  %xe = tensor.empty() : tensor<2x8x4xf32>
  %xf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%xe : tensor<2x8x4xf32>) {
    ^bb0(%out: f32):
      %x0 = linalg.index 0 : index
      %x1 = linalg.index 1 : index
      %x2 = linalg.index 2 : index
      %xvc0 = arith.constant 1000 : index
      %xvt0 = arith.muli %xvc0, %r : index
      %xvc1 = arith.constant 100 : index
      %xvt1 = arith.muli %xvc1, %x0 : index
      %xva1 = arith.addi %xvt0, %xvt1 : index
      %xvc2 = arith.constant 10 : index
      %xvt2 = arith.muli %xvc2, %x1 : index
      %xva2 = arith.addi %xva1, %xvt2 : index
      %xvc3 = arith.constant 1 : index
      %xvt3 = arith.muli %xvc3, %x2 : index
      %xva3 = arith.addi %xva2, %xvt3 : index
      %xvi = arith.index_cast %xva3 : index to i64
      %xv = arith.sitofp %xvi : i64 to f32
      linalg.yield %xv : f32
  } -> tensor<2x8x4xf32>
  %y = shard.all_reduce %xf on @tp grid_axes = [0] reduction = average : tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  %qe = tensor.empty() : tensor<2x8x4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<2x8x4xf32>) outs(%qe : tensor<2x8x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %q0 = linalg.index 0 : index
      %q1 = linalg.index 1 : index
      %q2 = linalg.index 2 : index
      %base = arith.constant 1500 : index
      %evc0 = arith.constant 1 : index
      %evt0 = arith.muli %evc0, %base : index
      %evc1 = arith.constant 100 : index
      %evt1 = arith.muli %evc1, %q0 : index
      %eva1 = arith.addi %evt0, %evt1 : index
      %evc2 = arith.constant 10 : index
      %evt2 = arith.muli %evc2, %q1 : index
      %eva2 = arith.addi %eva1, %evt2 : index
      %evc3 = arith.constant 1 : index
      %evt3 = arith.muli %evc3, %q2 : index
      %eva3 = arith.addi %eva2, %evt3 : index
      %evi = arith.index_cast %eva3 : index to i64
      %ev = arith.sitofp %evi : i64 to f32
      %qs = arith.subf %in, %ev : f32
      linalg.yield %qs : f32
  } -> tensor<2x8x4xf32>
  return %q : tensor<2x8x4xf32>
}

// all-to-all splitting the sequence (dim 1) and concatenating the batch
// (dim 0): element (a, j, k) is rank a/2's (a%2, 2r + j, k).
func.func @exchange_seq(%arg: tensor<2x8x4xf32>) -> tensor<8x2x4xf32> {
  %r = shard.process_linear_index on @tp : index
  %k2 = arith.constant 2 : index
  %k4 = arith.constant 4 : index
  %k8 = arith.constant 8 : index
  %xe = tensor.empty() : tensor<2x8x4xf32>
  %xf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%xe : tensor<2x8x4xf32>) {
    ^bb0(%out: f32):
      %x0 = linalg.index 0 : index
      %x1 = linalg.index 1 : index
      %x2 = linalg.index 2 : index
      %xvc0 = arith.constant 1000 : index
      %xvt0 = arith.muli %xvc0, %r : index
      %xvc1 = arith.constant 100 : index
      %xvt1 = arith.muli %xvc1, %x0 : index
      %xva1 = arith.addi %xvt0, %xvt1 : index
      %xvc2 = arith.constant 10 : index
      %xvt2 = arith.muli %xvc2, %x1 : index
      %xva2 = arith.addi %xva1, %xvt2 : index
      %xvc3 = arith.constant 1 : index
      %xvt3 = arith.muli %xvc3, %x2 : index
      %xva3 = arith.addi %xva2, %xvt3 : index
      %xvi = arith.index_cast %xva3 : index to i64
      %xv = arith.sitofp %xvi : i64 to f32
      linalg.yield %xv : f32
  } -> tensor<2x8x4xf32>
  %y = shard.all_to_all %xf on @tp grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x8x4xf32> -> tensor<8x2x4xf32>
  %qe = tensor.empty() : tensor<8x2x4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<8x2x4xf32>) outs(%qe : tensor<8x2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %q0 = linalg.index 0 : index
      %q1 = linalg.index 1 : index
      %q2 = linalg.index 2 : index
      %g = arith.divui %q0, %k2 : index
      %il = arith.remui %q0, %k2 : index
      %evc0 = arith.constant 1000 : index
      %evt0 = arith.muli %evc0, %g : index
      %evc1 = arith.constant 100 : index
      %evt1 = arith.muli %evc1, %il : index
      %eva1 = arith.addi %evt0, %evt1 : index
      %evc2 = arith.constant 20 : index
      %evt2 = arith.muli %evc2, %r : index
      %eva2 = arith.addi %eva1, %evt2 : index
      %evc3 = arith.constant 10 : index
      %evt3 = arith.muli %evc3, %q1 : index
      %eva3 = arith.addi %eva2, %evt3 : index
      %evc4 = arith.constant 1 : index
      %evt4 = arith.muli %evc4, %q2 : index
      %eva4 = arith.addi %eva3, %evt4 : index
      %evi = arith.index_cast %eva4 : index to i64
      %ev = arith.sitofp %evi : i64 to f32
      %qs = arith.subf %in, %ev : f32
      linalg.yield %qs : f32
  } -> tensor<8x2x4xf32>
  return %q : tensor<8x2x4xf32>
}

// all-to-all splitting the hidden dim (2) and concatenating the sequence
// (dim 1): element (i, b, 0) is rank b/8's (i, b%8, r).
func.func @exchange_hidden(%arg: tensor<2x8x4xf32>) -> tensor<2x32x1xf32> {
  %r = shard.process_linear_index on @tp : index
  %k2 = arith.constant 2 : index
  %k4 = arith.constant 4 : index
  %k8 = arith.constant 8 : index
  %xe = tensor.empty() : tensor<2x8x4xf32>
  %xf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%xe : tensor<2x8x4xf32>) {
    ^bb0(%out: f32):
      %x0 = linalg.index 0 : index
      %x1 = linalg.index 1 : index
      %x2 = linalg.index 2 : index
      %xvc0 = arith.constant 1000 : index
      %xvt0 = arith.muli %xvc0, %r : index
      %xvc1 = arith.constant 100 : index
      %xvt1 = arith.muli %xvc1, %x0 : index
      %xva1 = arith.addi %xvt0, %xvt1 : index
      %xvc2 = arith.constant 10 : index
      %xvt2 = arith.muli %xvc2, %x1 : index
      %xva2 = arith.addi %xva1, %xvt2 : index
      %xvc3 = arith.constant 1 : index
      %xvt3 = arith.muli %xvc3, %x2 : index
      %xva3 = arith.addi %xva2, %xvt3 : index
      %xvi = arith.index_cast %xva3 : index to i64
      %xv = arith.sitofp %xvi : i64 to f32
      linalg.yield %xv : f32
  } -> tensor<2x8x4xf32>
  %y = shard.all_to_all %xf on @tp grid_axes = [0] split_axis = 2 concat_axis = 1 : tensor<2x8x4xf32> -> tensor<2x32x1xf32>
  %qe = tensor.empty() : tensor<2x32x1xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<2x32x1xf32>) outs(%qe : tensor<2x32x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %q0 = linalg.index 0 : index
      %q1 = linalg.index 1 : index
      %q2 = linalg.index 2 : index
      %g = arith.divui %q1, %k8 : index
      %jl = arith.remui %q1, %k8 : index
      %evc0 = arith.constant 1000 : index
      %evt0 = arith.muli %evc0, %g : index
      %evc1 = arith.constant 100 : index
      %evt1 = arith.muli %evc1, %q0 : index
      %eva1 = arith.addi %evt0, %evt1 : index
      %evc2 = arith.constant 10 : index
      %evt2 = arith.muli %evc2, %jl : index
      %eva2 = arith.addi %eva1, %evt2 : index
      %evc3 = arith.constant 1 : index
      %evt3 = arith.muli %evc3, %r : index
      %eva3 = arith.addi %eva2, %evt3 : index
      %evi = arith.index_cast %eva3 : index to i64
      %ev = arith.sitofp %evi : i64 to f32
      %qs = arith.subf %in, %ev : f32
      linalg.yield %qs : f32
  } -> tensor<2x32x1xf32>
  return %q : tensor<2x32x1xf32>
}

// all-slice of the hidden dim (no communication): rank r keeps column r.
func.func @slice_hidden(%arg: tensor<2x8x4xf32>) -> tensor<2x8x1xf32> {
  %r = shard.process_linear_index on @tp : index
  %k2 = arith.constant 2 : index
  %k4 = arith.constant 4 : index
  %k8 = arith.constant 8 : index
  %xe = tensor.empty() : tensor<2x8x4xf32>
  %xf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%xe : tensor<2x8x4xf32>) {
    ^bb0(%out: f32):
      %x0 = linalg.index 0 : index
      %x1 = linalg.index 1 : index
      %x2 = linalg.index 2 : index
      %xvc0 = arith.constant 1000 : index
      %xvt0 = arith.muli %xvc0, %r : index
      %xvc1 = arith.constant 100 : index
      %xvt1 = arith.muli %xvc1, %x0 : index
      %xva1 = arith.addi %xvt0, %xvt1 : index
      %xvc2 = arith.constant 10 : index
      %xvt2 = arith.muli %xvc2, %x1 : index
      %xva2 = arith.addi %xva1, %xvt2 : index
      %xvc3 = arith.constant 1 : index
      %xvt3 = arith.muli %xvc3, %x2 : index
      %xva3 = arith.addi %xva2, %xvt3 : index
      %xvi = arith.index_cast %xva3 : index to i64
      %xv = arith.sitofp %xvi : i64 to f32
      linalg.yield %xv : f32
  } -> tensor<2x8x4xf32>
  %y = shard.all_slice %xf on @tp grid_axes = [0] slice_axis = 2 : tensor<2x8x4xf32> -> tensor<2x8x1xf32>
  %qe = tensor.empty() : tensor<2x8x1xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<2x8x1xf32>) outs(%qe : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %q0 = linalg.index 0 : index
      %q1 = linalg.index 1 : index
      %q2 = linalg.index 2 : index
      %evc0 = arith.constant 1001 : index
      %evt0 = arith.muli %evc0, %r : index
      %evc1 = arith.constant 100 : index
      %evt1 = arith.muli %evc1, %q0 : index
      %eva1 = arith.addi %evt0, %evt1 : index
      %evc2 = arith.constant 10 : index
      %evt2 = arith.muli %evc2, %q1 : index
      %eva2 = arith.addi %eva1, %evt2 : index
      %evi = arith.index_cast %eva2 : index to i64
      %ev = arith.sitofp %evi : i64 to f32
      %qs = arith.subf %in, %ev : f32
      linalg.yield %qs : f32
  } -> tensor<2x8x1xf32>
  return %q : tensor<2x8x1xf32>
}

// bf16 all-gather along the hidden dim (2): values 64 r + 32 i + 4 j + k
// (exact in bf16); element (i, j, k) is rank k/4's (i, j, k%4).
func.func @gather_bf16(%arg: tensor<2x8x4xf32>) -> tensor<2x8x16xf32> {
  %r = shard.process_linear_index on @tp : index
  %k2 = arith.constant 2 : index
  %k4 = arith.constant 4 : index
  %k8 = arith.constant 8 : index
  %xe = tensor.empty() : tensor<2x8x4xf32>
  %xf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%xe : tensor<2x8x4xf32>) {
    ^bb0(%out: f32):
      %x0 = linalg.index 0 : index
      %x1 = linalg.index 1 : index
      %x2 = linalg.index 2 : index
      %xvc0 = arith.constant 64 : index
      %xvt0 = arith.muli %xvc0, %r : index
      %xvc1 = arith.constant 32 : index
      %xvt1 = arith.muli %xvc1, %x0 : index
      %xva1 = arith.addi %xvt0, %xvt1 : index
      %xvc2 = arith.constant 4 : index
      %xvt2 = arith.muli %xvc2, %x1 : index
      %xva2 = arith.addi %xva1, %xvt2 : index
      %xvc3 = arith.constant 1 : index
      %xvt3 = arith.muli %xvc3, %x2 : index
      %xva3 = arith.addi %xva2, %xvt3 : index
      %xvi = arith.index_cast %xva3 : index to i64
      %xv = arith.sitofp %xvi : i64 to f32
      linalg.yield %xv : f32
  } -> tensor<2x8x4xf32>
  %xh = tensor.empty() : tensor<2x8x4xbf16>
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%xf : tensor<2x8x4xf32>) outs(%xh : tensor<2x8x4xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %tr = arith.truncf %in : f32 to bf16
      linalg.yield %tr : bf16
  } -> tensor<2x8x4xbf16>
  %y = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 2 : tensor<2x8x4xbf16> -> tensor<2x8x16xbf16>
  %qe = tensor.empty() : tensor<2x8x16xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<2x8x16xbf16>) outs(%qe : tensor<2x8x16xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %q0 = linalg.index 0 : index
      %q1 = linalg.index 1 : index
      %q2 = linalg.index 2 : index
      %g = arith.divui %q2, %k4 : index
      %kl = arith.remui %q2, %k4 : index
      %evc0 = arith.constant 64 : index
      %evt0 = arith.muli %evc0, %g : index
      %evc1 = arith.constant 32 : index
      %evt1 = arith.muli %evc1, %q0 : index
      %eva1 = arith.addi %evt0, %evt1 : index
      %evc2 = arith.constant 4 : index
      %evt2 = arith.muli %evc2, %q1 : index
      %eva2 = arith.addi %eva1, %evt2 : index
      %evc3 = arith.constant 1 : index
      %evt3 = arith.muli %evc3, %kl : index
      %eva3 = arith.addi %eva2, %evt3 : index
      %evi = arith.index_cast %eva3 : index to i64
      %ev = arith.sitofp %evi : i64 to f32
      %qw = arith.extf %in : bf16 to f32
      %qs = arith.subf %qw, %ev : f32
      linalg.yield %qs : f32
  } -> tensor<2x8x16xf32>
  return %q : tensor<2x8x16xf32>
}

// all-reduce of bf16 values into f32 (the reduction runs in f32):
// 384 + 4 (32 i + 4 j + k).
func.func @reduce_bf16_f32(%arg: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %r = shard.process_linear_index on @tp : index
  %k2 = arith.constant 2 : index
  %k4 = arith.constant 4 : index
  %k8 = arith.constant 8 : index
  %xe = tensor.empty() : tensor<2x8x4xf32>
  %xf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%xe : tensor<2x8x4xf32>) {
    ^bb0(%out: f32):
      %x0 = linalg.index 0 : index
      %x1 = linalg.index 1 : index
      %x2 = linalg.index 2 : index
      %xvc0 = arith.constant 64 : index
      %xvt0 = arith.muli %xvc0, %r : index
      %xvc1 = arith.constant 32 : index
      %xvt1 = arith.muli %xvc1, %x0 : index
      %xva1 = arith.addi %xvt0, %xvt1 : index
      %xvc2 = arith.constant 4 : index
      %xvt2 = arith.muli %xvc2, %x1 : index
      %xva2 = arith.addi %xva1, %xvt2 : index
      %xvc3 = arith.constant 1 : index
      %xvt3 = arith.muli %xvc3, %x2 : index
      %xva3 = arith.addi %xva2, %xvt3 : index
      %xvi = arith.index_cast %xva3 : index to i64
      %xv = arith.sitofp %xvi : i64 to f32
      linalg.yield %xv : f32
  } -> tensor<2x8x4xf32>
  %xh = tensor.empty() : tensor<2x8x4xbf16>
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%xf : tensor<2x8x4xf32>) outs(%xh : tensor<2x8x4xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %tr = arith.truncf %in : f32 to bf16
      linalg.yield %tr : bf16
  } -> tensor<2x8x4xbf16>
  %y = shard.all_reduce %x on @tp grid_axes = [0] : tensor<2x8x4xbf16> -> tensor<2x8x4xf32>
  %qe = tensor.empty() : tensor<2x8x4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<2x8x4xf32>) outs(%qe : tensor<2x8x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %q0 = linalg.index 0 : index
      %q1 = linalg.index 1 : index
      %q2 = linalg.index 2 : index
      %base = arith.constant 384 : index
      %evc0 = arith.constant 1 : index
      %evt0 = arith.muli %evc0, %base : index
      %evc1 = arith.constant 128 : index
      %evt1 = arith.muli %evc1, %q0 : index
      %eva1 = arith.addi %evt0, %evt1 : index
      %evc2 = arith.constant 16 : index
      %evt2 = arith.muli %evc2, %q1 : index
      %eva2 = arith.addi %eva1, %evt2 : index
      %evc3 = arith.constant 4 : index
      %evt3 = arith.muli %evc3, %q2 : index
      %eva3 = arith.addi %eva2, %evt3 : index
      %evi = arith.index_cast %eva3 : index to i64
      %ev = arith.sitofp %evi : i64 to f32
      %qs = arith.subf %in, %ev : f32
      linalg.yield %qs : f32
  } -> tensor<2x8x4xf32>
  return %q : tensor<2x8x4xf32>
}

// A 2x2 grid, all-gather along dim 0 over grid axis 1 (groups {0, 1} and
// {2, 3}): element (a, j, k) is rank 2 (r / 2) + a / 2's (a%2, j, k).
func.func @gather_2d(%arg: tensor<2x8x4xf32>) -> tensor<4x8x4xf32> {
  %r = shard.process_linear_index on @g2 : index
  %k2 = arith.constant 2 : index
  %k4 = arith.constant 4 : index
  %k8 = arith.constant 8 : index
  %xe = tensor.empty() : tensor<2x8x4xf32>
  %xf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%xe : tensor<2x8x4xf32>) {
    ^bb0(%out: f32):
      %x0 = linalg.index 0 : index
      %x1 = linalg.index 1 : index
      %x2 = linalg.index 2 : index
      %xvc0 = arith.constant 1000 : index
      %xvt0 = arith.muli %xvc0, %r : index
      %xvc1 = arith.constant 100 : index
      %xvt1 = arith.muli %xvc1, %x0 : index
      %xva1 = arith.addi %xvt0, %xvt1 : index
      %xvc2 = arith.constant 10 : index
      %xvt2 = arith.muli %xvc2, %x1 : index
      %xva2 = arith.addi %xva1, %xvt2 : index
      %xvc3 = arith.constant 1 : index
      %xvt3 = arith.muli %xvc3, %x2 : index
      %xva3 = arith.addi %xva2, %xvt3 : index
      %xvi = arith.index_cast %xva3 : index to i64
      %xv = arith.sitofp %xvi : i64 to f32
      linalg.yield %xv : f32
  } -> tensor<2x8x4xf32>
  %y = shard.all_gather %xf on @g2 grid_axes = [1] gather_axis = 0 : tensor<2x8x4xf32> -> tensor<4x8x4xf32>
  %qe = tensor.empty() : tensor<4x8x4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<4x8x4xf32>) outs(%qe : tensor<4x8x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %q0 = linalg.index 0 : index
      %q1 = linalg.index 1 : index
      %q2 = linalg.index 2 : index
      %row = arith.divui %r, %k2 : index
      %g = arith.divui %q0, %k2 : index
      %il = arith.remui %q0, %k2 : index
      %evc0 = arith.constant 2000 : index
      %evt0 = arith.muli %evc0, %row : index
      %evc1 = arith.constant 1000 : index
      %evt1 = arith.muli %evc1, %g : index
      %eva1 = arith.addi %evt0, %evt1 : index
      %evc2 = arith.constant 100 : index
      %evt2 = arith.muli %evc2, %il : index
      %eva2 = arith.addi %eva1, %evt2 : index
      %evc3 = arith.constant 10 : index
      %evt3 = arith.muli %evc3, %q1 : index
      %eva3 = arith.addi %eva2, %evt3 : index
      %evc4 = arith.constant 1 : index
      %evt4 = arith.muli %evc4, %q2 : index
      %eva4 = arith.addi %eva3, %evt4 : index
      %evi = arith.index_cast %eva4 : index to i64
      %ev = arith.sitofp %evi : i64 to f32
      %qs = arith.subf %in, %ev : f32
      linalg.yield %qs : f32
  } -> tensor<4x8x4xf32>
  return %q : tensor<4x8x4xf32>
}


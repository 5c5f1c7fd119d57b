// RUN: overlap-opt %s --convert-overlap-to-runtime -split-input-file -verify-diagnostics | FileCheck %s

shard.grid @tp(shape = 2x4)

// A scheduled all-reduce tile pair: the streams are enqueued interleaved
// per tile (GEMM 0, signal 0, wait 0, all-reduce 0, then tile 1: the
// collective of tile 0 is enqueued before the GEMM of tile 1), the group of
// axis 1 is split once per context at entry from the rank's grid
// coordinates (groups.mlir), and the region ends with a join. A GEMM
// carries its tile index only when a collective of the region can run
// beside it: GEMM 1 may run while all-reduce 0 does (tile 2); GEMM 0 comes
// before every all-reduce, so it gets -1 (every SM on the CUDA backend).
// CHECK-NOT: shard.grid
// CHECK-LABEL: func.func @two_tiles
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr, %{{.*}}: memref<256x64xf32>, %{{.*}}: memref<64x32xf32>, %{{.*}}: memref<256x32xf32>)
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: %[[RANK:.*]] = call @overlap_context_rank(%[[CTX]])
// CHECK: call @overlap_group_split_cached(%[[CTX]], %{{.*}}, %{{.*}}, %[[COLOR:[0-9a-z_]+]], %[[KEY:[0-9a-z_]+]], %[[SLOT:[0-9a-z_]+]])
// CHECK: %[[GROUP:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK: call @overlap_signals_acquire(%[[CTX]], %{{.*}}, %{{.*}}, %[[SSLOT:[0-9a-z_]+]])
// CHECK: %[[SIGS:.*]] = llvm.load %[[SSLOT]]
// CHECK: call @overlap_gemm(%[[CTX]], %c0_i32{{[_0-9]*}}, %c-1_i64
// CHECK: call @overlap_signal(%[[CTX]], %c0_i32{{.*}}, %[[SIGS]], %c0_i32
// CHECK-NOT: call @overlap_gemm
// CHECK: call @overlap_wait(%[[CTX]], %c1_i32{{.*}}, %[[SIGS]], %c0_i32
// CHECK: call @overlap_all_reduce(%[[CTX]], %c1_i32{{.*}}, %[[GROUP]],
// CHECK: call @overlap_gemm(%[[CTX]], %c0_i32{{[_0-9]*}}, %c2_i64
// CHECK: call @overlap_signal(%[[CTX]], %c0_i32{{.*}}, %[[SIGS]], %c1_i32
// CHECK: call @overlap_wait(%[[CTX]], %c1_i32{{.*}}, %[[SIGS]], %c1_i32
// CHECK: call @overlap_all_reduce(%[[CTX]], %c1_i32{{.*}}, %[[GROUP]],
// CHECK: call @overlap_context_synchronize(%[[CTX]])
// CHECK-NOT: overlap.
// CHECK: return
func.func @two_tiles(%a: memref<256x64xf32>, %b: memref<64x32xf32>, %c: memref<256x32xf32>) -> memref<256x32xf32> {
  %c0 = memref.subview %c[0, 0] [128, 32] [1, 1] : memref<256x32xf32> to memref<128x32xf32, strided<[32, 1]>>
  %c1 = memref.subview %c[128, 0] [128, 32] [1, 1] : memref<256x32xf32> to memref<128x32xf32, strided<[32, 1], offset: 4096>>
  %a0 = memref.subview %a[0, 0] [128, 64] [1, 1] : memref<256x64xf32> to memref<128x64xf32, strided<[64, 1]>>
  %a1 = memref.subview %a[128, 0] [128, 64] [1, 1] : memref<256x64xf32> to memref<128x64xf32, strided<[64, 1], offset: 8192>>
  %sig = overlap.signals : !overlap.signals<2>
  overlap.concurrent {
    overlap.stream compute {
      linalg.matmul ins(%a0, %b : memref<128x64xf32, strided<[64, 1]>>, memref<64x32xf32>) outs(%c0 : memref<128x32xf32, strided<[32, 1]>>)
      overlap.signal %sig[0] : !overlap.signals<2>
      linalg.matmul ins(%a1, %b : memref<128x64xf32, strided<[64, 1], offset: 8192>>, memref<64x32xf32>) outs(%c1 : memref<128x32xf32, strided<[32, 1], offset: 4096>>)
      overlap.signal %sig[1] : !overlap.signals<2>
    }
    overlap.stream comm {
      overlap.wait %sig[0] : !overlap.signals<2>
      overlap.all_reduce %c0 on @tp grid_axes = [1] : memref<128x32xf32, strided<[32, 1]>>
      overlap.wait %sig[1] : !overlap.signals<2>
      overlap.all_reduce %c1 on @tp grid_axes = [1] : memref<128x32xf32, strided<[32, 1], offset: 4096>>
    }
  }
  return %c : memref<256x32xf32>
}

// -----

shard.grid @tp(shape = 2x4)

// A region of one tile (a one-tile reference, a plan that keeps one tile):
// its one flag orders the GEMM and the all-reduce, nothing runs beside the
// GEMM, so it gets tile -1 (every SM on the CUDA backend), not 0.
// CHECK-LABEL: func.func @one_tile
// CHECK: call @overlap_gemm(%{{.*}}, %c0_i32{{[_0-9]*}}, %c-1_i64
// CHECK: call @overlap_all_reduce(
func.func @one_tile(%a: memref<256x64xf32>, %b: memref<64x32xf32>, %c: memref<256x32xf32>) -> memref<256x32xf32> {
  %sig = overlap.signals : !overlap.signals<1>
  overlap.concurrent {
    overlap.stream compute {
      linalg.matmul ins(%a, %b : memref<256x64xf32>, memref<64x32xf32>) outs(%c : memref<256x32xf32>)
      overlap.signal %sig[0] : !overlap.signals<1>
    }
    overlap.stream comm {
      overlap.wait %sig[0] : !overlap.signals<1>
      overlap.all_reduce %c on @tp grid_axes = [1] : memref<256x32xf32>
    }
  }
  return %c : memref<256x32xf32>
}

// -----

shard.grid @tp(shape = 2)

// Two one-tile ops in one region, as a --strategy=none program has them
// (examples/mlp.mlir: all-gather, GEMM; GEMM, reduce-scatter): the flags
// order both GEMMs after the all-gather and before the reduce-scatter, so
// no collective runs beside either and neither gets a tile index.
// CHECK-LABEL: func.func @one_tile_ops_sharing_a_region
// CHECK-NOT: call @overlap_gemm(%{{[^,]*}}, %{{[^,]*}}, %c{{[0-9]}}
// CHECK: call @overlap_gemm(%{{[^,]*}}, %c0_i32{{[_0-9]*}}, %c-1_i64
// CHECK-NOT: call @overlap_gemm(%{{[^,]*}}, %{{[^,]*}}, %c{{[0-9]}}
// CHECK: call @overlap_gemm(%{{[^,]*}}, %c0_i32{{[_0-9]*}}, %c-1_i64
// CHECK-NOT: call @overlap_gemm
// CHECK: return
func.func @one_tile_ops_sharing_a_region(%x: memref<64x32xf32>, %g: memref<128x32xf32>, %w: memref<32x32xf32>, %h: memref<128x32xf32>, %y: memref<64x32xf32>) {
  %sig = overlap.signals : !overlap.signals<2>
  overlap.concurrent {
    overlap.stream compute {
      overlap.wait %sig[0] : !overlap.signals<2>
      linalg.matmul ins(%g, %w : memref<128x32xf32>, memref<32x32xf32>) outs(%h : memref<128x32xf32>)
      linalg.matmul ins(%h, %w : memref<128x32xf32>, memref<32x32xf32>) outs(%g : memref<128x32xf32>)
      overlap.signal %sig[1] : !overlap.signals<2>
    }
    overlap.stream comm {
      overlap.all_gather %x into %g on @tp grid_axes = [0] : memref<64x32xf32>, memref<128x32xf32>
      overlap.signal %sig[0] : !overlap.signals<2>
      overlap.wait %sig[1] : !overlap.signals<2>
      overlap.reduce_scatter %g into %y on @tp grid_axes = [0] : memref<128x32xf32>, memref<64x32xf32>
    }
  }
  return
}

// -----

shard.grid @tp(shape = 2)

// Without a flag between them, the GEMM and the all-reduce may run at
// once: the GEMM keeps its tile index.
// CHECK-LABEL: func.func @unordered
// CHECK: call @overlap_gemm(%{{[^,]*}}, %c0_i32{{[_0-9]*}}, %c0_i64
func.func @unordered(%a: memref<64x32xf32>, %w: memref<32x32xf32>, %c: memref<64x32xf32>, %d: memref<64x32xf32>) {
  overlap.concurrent {
    overlap.stream compute {
      linalg.matmul ins(%a, %w : memref<64x32xf32>, memref<32x32xf32>) outs(%c : memref<64x32xf32>)
    }
    overlap.stream comm {
      overlap.all_reduce %d on @tp grid_axes = [0] : memref<64x32xf32>
    }
  }
  return
}
// -----

shard.grid @tp(shape = 2)

// All-gather feeds compute: compute is enqueued until its wait cannot be
// satisfied yet, then comm until it raises the flag, then compute again.
// The accumulator's zero fill is one overlap_memset on compute (its
// element's bytes are all 0); the gather's strided-batched matmul
// broadcasts B (stride 0).
// CHECK-LABEL: func.func @gather_first
// CHECK: call @overlap_memset(%{{.*}}, %c0_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c0_i32{{[_0-9]*}}, %{{.*}})
// CHECK: call @overlap_all_gather(%{{.*}}, %c1_i32
// CHECK: call @overlap_signal(
// CHECK: call @overlap_wait(
// CHECK: call @overlap_gemm(%{{.*}}, %c0_i32{{.*}}, %c2_i64{{[_0-9]*}}, %c32_i64{{[_0-9]*}}, %c16_i64{{[_0-9]*}}, %c8_i64
// CHECK: call @overlap_context_synchronize
func.func @gather_first(%a: memref<32x8xf32>, %b: memref<8x16xf32>, %c: memref<2x32x16xf32>, %g: memref<64x8xf32>, %z: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %g3 = memref.expand_shape %g [[0, 1], [2]] output_shape [2, 32, 8] : memref<64x8xf32> into memref<2x32x8xf32>
  %sig = overlap.signals : !overlap.signals<1>
  overlap.concurrent {
    overlap.stream compute {
      linalg.fill ins(%zero : f32) outs(%z : memref<4xf32>)
      overlap.wait %sig[0] : !overlap.signals<1>
      linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
          ins(%g3, %b : memref<2x32x8xf32>, memref<8x16xf32>) outs(%c : memref<2x32x16xf32>)
    }
    overlap.stream comm {
      overlap.all_gather %a into %g on @tp grid_axes = [0] : memref<32x8xf32>, memref<64x8xf32>
      overlap.signal %sig[0] : !overlap.signals<1>
    }
  }
  return
}

// -----

shard.grid @tp(shape = 4)

// A collective on a buffer that is not contiguous cannot be one call.
func.func @strided_collective(%c: memref<128x64xf32>) {
  %v = memref.subview %c[0, 0] [128, 32] [1, 1] : memref<128x64xf32> to memref<128x32xf32, strided<[64, 1]>>
  // expected-error @+1 {{'overlap.all_reduce' op cannot be lowered: 'memref<128x32xf32, strided<[64, 1]>>' is not a contiguous buffer, and one collective call needs one (decompose along rows keeps tiles contiguous)}}
  overlap.all_reduce %v on @tp grid_axes = [0] : memref<128x32xf32, strided<[64, 1]>>
  return
}

// -----

shard.grid @tp(shape = 4)

// Outside a concurrent region every call is followed by a synchronize.
// CHECK-LABEL: func.func @sequential
// CHECK: call @overlap_all_reduce(%{{.*}}, %c1_i32
// CHECK: call @overlap_stream_synchronize(%{{.*}}, %c1_i32
func.func @sequential(%c: memref<128x64xf32>) {
  overlap.all_reduce %c on @tp grid_axes = [0] : memref<128x64xf32>
  return
}

// -----

shard.grid @tp(shape = 2x2)

// A dynamic layout (a buffer an scf.if chose) is checked at run time, and
// the rank's grid coordinates come from the runtime's rank (upstream's
// process-index lowering: the delinearized linear index).
// CHECK-LABEL: func.func @dynamic_layout
// CHECK: call @overlap_group_split_cached
// CHECK: %[[R:.*]] = call @overlap_context_rank
// CHECK-NEXT: %[[RI:.*]] = arith.index_cast %[[R]] : i32 to index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C2B:.*]] = arith.constant 2 : index
// CHECK: affine.delinearize_index %[[RI]] into (%[[C2]], %[[C2B]]) : index, index
// CHECK: cf.assert %{{.*}}, "overlap_all_reduce: a buffer is not contiguous at run time"
// CHECK: call @overlap_all_reduce
func.func @dynamic_layout(%c: memref<128x64xf32, strided<[?, ?], offset: ?>>) -> index {
  %i = shard.process_multi_index on @tp axes = [1] : index
  overlap.all_reduce %c on @tp grid_axes = [0] : memref<128x64xf32, strided<[?, ?], offset: ?>>
  return %i : index
}

// -----

// A GPU kernel launch needs target=cuda.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%arg0: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @launch_on_host(%x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    // expected-error @below {{'gpu.launch_func' op launches a GPU kernel, which needs target=cuda}}
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
}

// -----

// A batched matmul with a B per batch: B's batch stride and leading
// dimension come from its strides (2 x 4 x 16: 64 and 16), not 0 and 64.
// Outside a concurrent region nothing communicates while it runs: its tile
// is -1 (a GEMM alone, which the CUDA backend gives every SM).
// CHECK-LABEL: func.func @batched_b
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}:3, %[[BS:.*]]:3 = memref.extract_strided_metadata %arg2
// CHECK: %[[BSTRIDE:.*]] = arith.index_cast %[[BS]]#0
// CHECK: %[[LDB:.*]] = arith.index_cast %[[BS]]#1
// CHECK: call @overlap_gemm(%{{.*}}, %{{.*}}, %c-1_i64{{[_0-9]*}}, %c2_i64{{.*}}, %c8_i64{{.*}}, %c16_i64{{.*}}, %c4_i64{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LDB]], %[[BSTRIDE]],
func.func @batched_b(%a: memref<2x8x4xf32>, %b: memref<2x4x16xf32>, %c: memref<2x8x16xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x8x4xf32>, memref<2x4x16xf32>) outs(%c : memref<2x8x16xf32>)
  return
}

// -----

// i1 elements take one byte each (as LLVM stores them): copied by bytes.
// CHECK-LABEL: func.func @bits
// CHECK: call @overlap_memcpy(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c16_i64{{.*}})
// CHECK-NOT: memref.copy
func.func @bits(%a: memref<16xi1>, %b: memref<16xi1>) {
  memref.copy %a, %b : memref<16xi1> to memref<16xi1>
  return
}

// -----

// overlap.gemm is one overlap_gemm with its flags (TRANSPOSE_A 1,
// TRANSPOSE_B 2, OVERWRITE 4 unless it accumulates): a weight stored
// [n, k] passes its own leading dimension (64 = k), a transposed batched A
// [batch, k, m] its row stride (8 = m), and an overwrite into bf16 the
// bf16 type (2) as C's.
// CHECK-LABEL: func.func @gemm_flags
// CHECK: call @overlap_gemm(%{{.*}}, %{{.*}}, %c-1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c16_i64{{[_0-9]*}}, %c32_i64{{[_0-9]*}}, %c64_i64{{[_0-9]*}}, %c2_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LDB:.*]], %{{.*}}, %c2_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c6_i32{{[_0-9]*}})
// CHECK: call @overlap_gemm(%{{.*}}, %{{.*}}, %c-1_i64{{[_0-9]*}}, %c3_i64{{[_0-9]*}}, %c8_i64{{[_0-9]*}}, %c4_i64{{[_0-9]*}}, %c16_i64{{[_0-9]*}}, %c0_i32{{[_0-9]*}}, {{.*}}, %c1_i32{{[_0-9]*}})
func.func @gemm_flags(%x: memref<16x64xbf16>, %w: memref<32x64xbf16>, %y: memref<16x32xbf16>,
                      %a: memref<3x16x8xf32>, %b: memref<16x4xf32>, %c: memref<3x8x4xf32>) {
  overlap.gemm %x, %w into %y {transpose_b} : memref<16x64xbf16>, memref<32x64xbf16>, memref<16x32xbf16>
  overlap.gemm %a, %b into %c {accumulate, transpose_a} : memref<3x16x8xf32>, memref<16x4xf32>, memref<3x8x4xf32>
  return
}

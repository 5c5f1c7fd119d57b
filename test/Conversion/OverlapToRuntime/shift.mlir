// RUN: overlap-opt %s --convert-overlap-to-runtime -split-input-file | FileCheck %s

// overlap.shift on memrefs becomes overlap_shift(ctx, stream, tile, group,
// dtype, offset, src, dst, count): the offset before the buffers, count the
// elements of one buffer (each rank sends all of it to one peer).

shard.grid @tp(shape = 4)

// A scheduled rank-major tile: the GEMM on compute, the shift on comm after
// its wait; 16 x 64 bf16 is 1024 elements, dtype 2 (bf16).
// CHECK-LABEL: func.func @rank_major_tile
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr,
// CHECK: %[[GROUP:.*]] = call @overlap_context_world(%[[CTX]])
// CHECK: call @overlap_gemm(%[[CTX]], %c0_i32
// CHECK: call @overlap_signal(%[[CTX]], %c0_i32
// CHECK: call @overlap_wait(%[[CTX]], %c1_i32
// CHECK-NOT: call @
// CHECK: call @overlap_shift(%[[CTX]], %c1_i32{{[_0-9]*}}, %{{.*}}, %[[GROUP]], %c2_i32{{[_0-9]*}}, %c3_i64{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c1024_i64)
// CHECK-NOT: overlap.shift
// CHECK: return
func.func @rank_major_tile(%a: memref<16x32xbf16>, %b: memref<32x64xbf16>, %out: memref<16x64xbf16>) {
  %p = memref.alloc() : memref<16x64xbf16>
  %sig = overlap.signals : !overlap.signals<1>
  overlap.concurrent {
    overlap.stream compute {
      linalg.matmul ins(%a, %b : memref<16x32xbf16>, memref<32x64xbf16>) outs(%p : memref<16x64xbf16>)
      overlap.signal %sig[0] : !overlap.signals<1>
    }
    overlap.stream comm {
      overlap.wait %sig[0] : !overlap.signals<1>
      overlap.shift %p by 3 into %out on @tp grid_axes = [0] : memref<16x64xbf16>, memref<16x64xbf16>
    }
  }
  return
}

// -----

shard.grid @tp(shape = 2x4)

// A negative offset is passed as it is (the runtime takes it mod G); the
// group is grid axis 1.
// CHECK-LABEL: func.func @negative
// CHECK: call @overlap_shift(%{{.*}}, %c1_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c0_i32{{[_0-9]*}}, %c-1_i64{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c256_i64)
func.func @negative(%a: memref<8x32xf32>, %b: memref<8x32xf32>) {
  overlap.shift %a by -1 into %b on @tp grid_axes = [1] : memref<8x32xf32>, memref<8x32xf32>
  return
}

// -----

shard.grid @tp(shape = 4)

// Shifts marked `with_next` and the one after them are one call: enclosed in
// overlap_fuse_begin / overlap_fuse_end on their stream, and a signal that
// falls between them is enqueued after the end (the fused sends run at the
// end). The compute stream's wait on that signal comes after it.
// CHECK-LABEL: func.func @fused
// CHECK: call @overlap_fuse_begin(%{{.*}}, %c1_i32
// CHECK: call @overlap_shift(%{{.*}}, %c1_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c0_i32{{[_0-9]*}}, %c1_i64
// CHECK-NOT: call @overlap_signal
// CHECK: call @overlap_shift(%{{.*}}, %c1_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c0_i32{{[_0-9]*}}, %c2_i64
// CHECK-NOT: call @overlap_signal
// CHECK: call @overlap_fuse_end(%{{.*}}, %c1_i32
// CHECK: call @overlap_signal(%{{.*}}, %c1_i32
// CHECK: call @overlap_wait(%{{.*}}, %c0_i32
// CHECK: call @overlap_gemm
func.func @fused(%a: memref<16x32xf32>, %x: memref<16x32xf32>, %y: memref<16x32xf32>, %b: memref<32x8xf32>, %o: memref<16x8xf32>) {
  %sig = overlap.signals : !overlap.signals<1>
  overlap.concurrent {
    overlap.stream compute {
      overlap.wait %sig[0] : !overlap.signals<1>
      linalg.matmul ins(%x, %b : memref<16x32xf32>, memref<32x8xf32>) outs(%o : memref<16x8xf32>)
    }
    overlap.stream comm {
      overlap.shift %a by 1 into %x on @tp grid_axes = [0] {with_next} : memref<16x32xf32>, memref<16x32xf32>
      overlap.signal %sig[0] : !overlap.signals<1>
      overlap.shift %a by 2 into %y on @tp grid_axes = [0] : memref<16x32xf32>, memref<16x32xf32>
    }
  }
  return
}

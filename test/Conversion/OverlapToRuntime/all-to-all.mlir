// RUN: overlap-opt %s --convert-overlap-to-runtime -split-input-file -verify-diagnostics | FileCheck %s

// overlap.all_to_all on memrefs becomes overlap_all_to_all(ctx, stream,
// tile, group, dtype, src, dst, count), count being per peer: the elements
// of the buffer / G.

shard.grid @ep(shape = 4)

// A scheduled dispatch tile: the pack (strided view -> contiguous buffer)
// is enqueued on compute, the exchange on comm after its wait; 8 x 32 x 64
// f32 on 4 ranks is 4 blocks of 4096 elements. The group of a one-axis
// grid is the world (no split).
// CHECK-LABEL: func.func @dispatch_tile
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr, %{{.*}}: memref<8x64x64xf32>)
// CHECK: %[[GROUP:.*]] = call @overlap_context_world(%[[CTX]])
// CHECK: call @overlap_signals_acquire(%[[CTX]]
// CHECK: call @overlap_pack(%[[CTX]], %c0_i32
// CHECK: call @overlap_signal(%[[CTX]], %c0_i32
// CHECK: call @overlap_wait(%[[CTX]], %c1_i32
// CHECK-NOT: call @
// CHECK: call @overlap_all_to_all(%[[CTX]], %c1_i32{{[_0-9]*}}, %{{.*}}, %[[GROUP]], %c0_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c4096_i64)
// CHECK-NOT: call @
// CHECK: call @overlap_signal(%[[CTX]], %c1_i32
// CHECK: call @overlap_wait(%[[CTX]], %c0_i32
// CHECK: call @overlap_context_synchronize(%[[CTX]])
// CHECK-NOT: overlap.all_to_all
// CHECK: return
func.func @dispatch_tile(%x: memref<8x64x64xf32>) {
  %send = memref.alloc() : memref<8x32x64xf32>
  %recv = memref.alloc() : memref<8x32x64xf32>
  %x0 = memref.subview %x[0, 0, 0] [8, 32, 64] [1, 1, 1] : memref<8x64x64xf32> to memref<8x32x64xf32, strided<[4096, 64, 1]>>
  %sig = overlap.signals : !overlap.signals<2>
  overlap.concurrent {
    overlap.stream compute {
      linalg.copy ins(%x0 : memref<8x32x64xf32, strided<[4096, 64, 1]>>) outs(%send : memref<8x32x64xf32>)
      overlap.signal %sig[0] : !overlap.signals<2>
      overlap.wait %sig[1] : !overlap.signals<2>
    }
    overlap.stream comm {
      overlap.wait %sig[0] : !overlap.signals<2>
      overlap.all_to_all %send into %recv on @ep grid_axes = [0] : memref<8x32x64xf32>, memref<8x32x64xf32>
      overlap.signal %sig[1] : !overlap.signals<2>
    }
  }
  return
}

// -----

shard.grid @ep(shape = 2x4)

// The group is grid axis 1 (4 ranks, not the grid's 8): 16384 elements
// are 4 blocks of 4096. Outside a concurrent region the call is on comm and
// followed by a synchronize.
// CHECK-LABEL: func.func @grid_axis
// CHECK: call @overlap_all_to_all(%{{.*}}, %c1_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c0_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c4096_i64)
// CHECK-NOT: call @
// CHECK: call @overlap_stream_synchronize(%{{.*}}, %c1_i32
func.func @grid_axis(%a: memref<8x32x64xf32>, %b: memref<8x32x64xf32>) {
  overlap.all_to_all %a into %b on @ep grid_axes = [1] : memref<8x32x64xf32>, memref<8x32x64xf32>
  return
}

// -----

shard.grid @ep(shape = 2)

// bf16 (runtime dtype 2), 6 x 16 x 4 on 2 ranks: 2 blocks of 192.
// CHECK-LABEL: func.func @bf16
// CHECK: call @overlap_all_to_all(%{{.*}}, %c1_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c2_i32{{[_0-9]*}}, %{{.*}}, %{{.*}}, %c192_i64)
func.func @bf16(%a: memref<6x16x4xbf16>, %b: memref<6x16x4xbf16>) {
  overlap.all_to_all %a into %b on @ep grid_axes = [0] : memref<6x16x4xbf16>, memref<6x16x4xbf16>
  return
}

// -----

shard.grid @dyn(shape = ?)

// The count per peer: the elements over the group's size at run time (the
// grid's dynamic extent is the number of ranks: the group is the world).
// CHECK-LABEL: func.func @dynamic_group
// CHECK: %[[GROUP:.*]] = call @overlap_context_world
// CHECK: %[[N:.*]] = call @overlap_group_size(%[[GROUP]])
// CHECK: %[[N64:.*]] = arith.extsi %[[N]] : i32 to i64
// CHECK: %[[COUNT:.*]] = arith.divui %c256_i64{{[_0-9]*}}, %[[N64]]
// CHECK: call @overlap_all_to_all({{.*}}, %[[GROUP]], {{.*}}, %[[COUNT]])
func.func @dynamic_group(%a: memref<8x32xf32>, %b: memref<8x32xf32>) {
  overlap.all_to_all %a into %b on @dyn grid_axes = [0] : memref<8x32xf32>, memref<8x32xf32>
  return
}

// -----

shard.grid @ep(shape = 4)

// One call needs one contiguous buffer on each side.
func.func @strided(%a: memref<8x32xf32>, %c: memref<8x64xf32>) {
  %v = memref.subview %c[0, 0] [8, 32] [1, 1] : memref<8x64xf32> to memref<8x32xf32, strided<[64, 1]>>
  // expected-error @+1 {{'overlap.all_to_all' op cannot be lowered: 'memref<8x32xf32, strided<[64, 1]>>' is not a contiguous buffer, and one collective call needs one}}
  overlap.all_to_all %a into %v on @ep grid_axes = [0] : memref<8x32xf32>, memref<8x32xf32, strided<[64, 1]>>
  return
}

// RUN: overlap-opt %s --convert-overlap-to-runtime -split-input-file | FileCheck %s
// RUN: overlap-opt %s --convert-overlap-to-runtime=target=cuda -split-input-file | FileCheck %s --check-prefix=CUDA

// target=cuda: the splits (ncclCommSplit) come after the device is made
// current, so that they run on the context's device.
// CUDA-LABEL: func.func @sub_grids
// CUDA: call @overlap_cuda_make_current
// CUDA-NEXT: arith.constant
// CUDA-NEXT: arith.cmpi eq
// CUDA-NEXT: cf.assert %{{.*}}, "overlap_cuda_make_current: cannot make the context's device current"
// CUDA: call @overlap_group_split_cached
// CUDA: call @overlap_group_split_cached
// CUDA: call @overlap_all_reduce

// The process group of each (grid, axes) is taken once at function entry.
// A group that is a sub-grid is split once per context:
// overlap_group_split_cached(ctx, NULL, tag, color, key, &group), the tag a
// constant FNV-1a hash of the grid's shape and the group's axes (equal tags
// mean equal memberships, so programs sharing a context share the group).
// A group that is the whole grid in order is the world: no split at all.

shard.grid @tp(shape = 2x4)

// Axis 1 of 2x4 (tag 12158406342689790177 as a signed i64) and axis 0
// (9926090935722200768), each split once however often it is used; the
// second collective on axis 1 reuses the first group.
// CHECK-LABEL: func.func @sub_grids
// CHECK-SAME: (%[[CTX:[^:]*]]: !llvm.ptr
// CHECK-NOT: overlap_context_world
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: %[[TAG1:.*]] = arith.constant -6288337731019761439 : i64
// CHECK-NEXT: call @overlap_group_split_cached(%[[CTX]], %[[NULL]], %[[TAG1]], %{{.*}}, %{{.*}}, %[[SLOT1:[0-9a-z_]+]])
// CHECK-NEXT: %[[ROWS:.*]] = llvm.load %[[SLOT1]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[TAG0:.*]] = arith.constant -8520653137987350848 : i64
// CHECK-NEXT: call @overlap_group_split_cached(%[[CTX]], %{{.*}}, %[[TAG0]], %{{.*}}, %{{.*}}, %[[SLOT0:[0-9a-z_]+]])
// CHECK-NEXT: %[[COLS:.*]] = llvm.load %[[SLOT0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NOT: overlap_group_split
// CHECK: call @overlap_all_reduce(%[[CTX]], %{{.*}}, %{{.*}}, %[[ROWS]],
// CHECK: call @overlap_all_reduce(%[[CTX]], %{{.*}}, %{{.*}}, %[[COLS]],
// CHECK: call @overlap_all_reduce(%[[CTX]], %{{.*}}, %{{.*}}, %[[ROWS]],
// CHECK-NOT: overlap_group_split
// CHECK: return
func.func @sub_grids(%c: memref<128x64xf32>) {
  overlap.all_reduce %c on @tp grid_axes = [1] : memref<128x64xf32>
  overlap.all_reduce %c on @tp grid_axes = [0] : memref<128x64xf32>
  overlap.all_reduce %c on @tp grid_axes = [1] : memref<128x64xf32>
  return
}

// -----

shard.grid @tp(shape = 2x4)

// Axes [0, 1] of 2x4 are the world in world rank order: no split, no rank
// arithmetic. Axes [1, 0] are the same ranks in another order (key =
// c1 * 2 + c0): a split, with a tag of its own (16016850935978937762).
// CHECK-LABEL: func.func @whole_grid
// CHECK-SAME: (%[[CTX:[^:]*]]: !llvm.ptr
// CHECK: %[[WORLD:.*]] = call @overlap_context_world(%[[CTX]]) : (!llvm.ptr) -> !llvm.ptr
// CHECK: %[[TAG:.*]] = arith.constant -2429893137730613854 : i64
// CHECK-NEXT: call @overlap_group_split_cached(%[[CTX]], %{{.*}}, %[[TAG]],
// CHECK-NEXT: %[[REVERSED:.*]] = llvm.load
// CHECK: call @overlap_all_reduce(%[[CTX]], %{{.*}}, %{{.*}}, %[[WORLD]],
// CHECK: call @overlap_all_reduce(%[[CTX]], %{{.*}}, %{{.*}}, %[[REVERSED]],
func.func @whole_grid(%c: memref<128x64xf32>) {
  overlap.all_reduce %c on @tp grid_axes = [0, 1] : memref<128x64xf32>
  overlap.all_reduce %c on @tp grid_axes = [1, 0] : memref<128x64xf32>
  return
}

// -----

shard.grid @tp(shape = 4)

// A one-axis grid's only axis is the world.
// CHECK-LABEL: func.func @one_axis
// CHECK-NOT: overlap_group_split
// CHECK-NOT: overlap_context_rank
// CHECK: %[[WORLD:.*]] = call @overlap_context_world(
// CHECK: call @overlap_all_gather(%{{.*}}, %{{.*}}, %{{.*}}, %[[WORLD]],
// CHECK-NOT: overlap_group_split
// CHECK: return
func.func @one_axis(%a: memref<32x8xf32>, %g: memref<128x8xf32>) {
  overlap.all_gather %a into %g on @tp grid_axes = [0] : memref<32x8xf32>, memref<128x8xf32>
  return
}

// -----

// Axes of extent 1 change no membership: axis 1 of 1x4 is the world too.
// Two grids of the same shape and axes get the same tag (8191632673600294150
// for axis 0 of 2x2), whatever their names; axis 1 of 2x2 another one.
shard.grid @unit(shape = 1x4)
shard.grid @a(shape = 2x2)
shard.grid @b(shape = 2x2)

// CHECK-LABEL: func.func @tags
// CHECK: call @overlap_context_world(
// CHECK: %[[TA:.*]] = arith.constant 8191632673600294150 : i64
// CHECK-NEXT: call @overlap_group_split_cached(%{{.*}}, %{{.*}}, %[[TA]],
// CHECK: %[[TB:.*]] = arith.constant 8191632673600294150 : i64
// CHECK-NEXT: call @overlap_group_split_cached(%{{.*}}, %{{.*}}, %[[TB]],
// CHECK: %[[TC:.*]] = arith.constant -8022795993141668057 : i64
// CHECK-NEXT: call @overlap_group_split_cached(%{{.*}}, %{{.*}}, %[[TC]],
func.func @tags(%c: memref<64x64xf32>) {
  overlap.all_reduce %c on @unit grid_axes = [1] : memref<64x64xf32>
  overlap.all_reduce %c on @a grid_axes = [0] : memref<64x64xf32>
  overlap.all_reduce %c on @b grid_axes = [0] : memref<64x64xf32>
  overlap.all_reduce %c on @a grid_axes = [1] : memref<64x64xf32>
  return
}

// RUN: overlap-opt %s --overlap-expand-collectives | FileCheck %s
// RUN: overlap-opt %s --overlap-pipeline | overlap-opt --overlap-check-collectives -o /dev/null

// The rooted shard ops and shift, written with all_gather, all_reduce and
// all_slice (python/tests/test_rooted_collectives.py runs them against
// numpy).

shard.grid @g(shape = 2x3)

// CHECK-LABEL: func @broadcast
// The stack of every group rank's input, and the root's block: group rank
// 1 * 3 + 2 = 5 on axes [0, 1].
// CHECK: %[[S:.*]] = shard.all_gather %{{.*}} on @g grid_axes = [0, 1] gather_axis = 0 : tensor<1x4x8xf32> -> tensor<6x4x8xf32>
// CHECK: tensor.extract_slice %[[S]][%{{.*}}, 0, 0] [1, 4, 8] [1, 1, 1] : tensor<6x4x8xf32> to tensor<4x8xf32>
// CHECK-NOT: shard.broadcast
func.func @broadcast(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = shard.broadcast %x on @g grid_axes = [0, 1] root = [1, 2] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func @dynamic_root
// A root from a value is clamped into the axis.
// CHECK: arith.minsi %{{.*}}, %c2
// CHECK: arith.maxsi
func.func @dynamic_root(%x: tensor<4x8xf32>, %root: index) -> tensor<4x8xf32> {
  %r = shard.broadcast %x on @g grid_axes = [1] root = [%root] : (tensor<4x8xf32>, index) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func @reduce
// CHECK: shard.all_reduce %{{.*}} on @g grid_axes = [1] reduction = max : tensor<4x8xf32> -> tensor<4x8xf64>
func.func @reduce(%x: tensor<4x8xf32>) -> tensor<4x8xf64> {
  %r = shard.reduce %x on @g grid_axes = [1] reduction = max root = [0] : (tensor<4x8xf32>) -> tensor<4x8xf64>
  return %r : tensor<4x8xf64>
}

// CHECK-LABEL: func @gather
// CHECK: shard.all_gather %{{.*}} on @g grid_axes = [1] gather_axis = 1 : tensor<4x8xf32> -> tensor<4x24xf32>
func.func @gather(%x: tensor<4x8xf32>) -> tensor<4x24xf32> {
  %r = shard.gather %x on @g grid_axes = [1] gather_axis = 1 root = [2] : (tensor<4x8xf32>) -> tensor<4x24xf32>
  return %r : tensor<4x24xf32>
}

// CHECK-LABEL: func @scatter
// CHECK: shard.all_gather {{.*}} -> tensor<2x6x8xf32>
// CHECK: %[[B:.*]] = tensor.extract_slice
// CHECK: shard.all_slice %[[B]] on @g grid_axes = [0] slice_axis = 0 : tensor<6x8xf32> -> tensor<3x8xf32>
func.func @scatter(%x: tensor<6x8xf32>) -> tensor<3x8xf32> {
  %r = shard.scatter %x on @g grid_axes = [0] scatter_axis = 0 root = [1] : (tensor<6x8xf32>) -> tensor<3x8xf32>
  return %r : tensor<3x8xf32>
}

// CHECK-LABEL: func @shift_rotate
// Rank i of axis 1 takes the block of (i - 1) mod 3 = (i + 2) mod 3.
// CHECK: %[[S:.*]] = shard.all_gather %{{.*}} on @g grid_axes = [1] gather_axis = 0 : tensor<1x4xf32> -> tensor<3x4xf32>
// CHECK: %[[I:.*]] = shard.process_multi_index on @g axes = [1]
// CHECK: %[[P:.*]] = arith.addi %{{.*}}, %c2
// CHECK: %[[M:.*]] = arith.remui %[[P]], %c3
// CHECK: tensor.extract_slice %[[S]][%[[M]], 0]
func.func @shift_rotate(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.shift %x on @g grid_axes = [0, 1] shift_axis = 1 offset = 1 rotate : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// CHECK-LABEL: func @shift_edge
// Without rotate, the rank with no source keeps its input.
// CHECK-DAG: arith.cmpi sge
// CHECK-DAG: arith.cmpi slt
// CHECK: linalg.generic
// CHECK: arith.select
func.func @shift_edge(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.shift %x on @g grid_axes = [1] shift_axis = 1 offset = -1 : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}


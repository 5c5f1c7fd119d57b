// RUN: overlap-opt %s --split-input-file --overlap-expand-collectives | FileCheck %s

// A peer's entries are checked axis by axis (row-major alone took [0, 2]
// on a 2x2 grid for rank 2): a dynamic entry at run time against its
// axis' extent, a constant one at compile time (left to
// overlap-check-collectives, which says why:
// expand-point-to-point-peers-invalid.mlir).

shard.grid @g(shape = 2x3)

// CHECK-LABEL: func.func @dynamic_destination
// CHECK: %[[TWO:.*]] = arith.constant 2 : index
// CHECK: %[[OK0:.*]] = arith.cmpi ult, %arg1, %[[TWO]] : index
// CHECK: cf.assert %[[OK0]], "shard.send at {{.*}}: its destination [?, ?] has entry 0 outside grid axis 0 of @g (extent 2)"
// CHECK: %[[THREE:.*]] = arith.constant 3 : index
// CHECK: %[[OK1:.*]] = arith.cmpi ult, %arg2, %[[THREE]] : index
// CHECK: cf.assert %[[OK1]], "shard.send at {{.*}}: its destination [?, ?] has entry 1 outside grid axis 1 of @g (extent 3)"
// CHECK: cf.assert {{.*}} "shard.recv at {{.*}}: its source [1, ?] has entry 1 outside grid axis 1 of @g (extent 3)"
// CHECK-NOT: = shard.send
// CHECK-NOT: = shard.recv
func.func @dynamic_destination(%x: tensor<2xf32>, %p: index, %q: index) -> tensor<2xf32> {
  %a = shard.send %x on @g grid_axes = [0, 1] destination = [%p, %q]
    : (tensor<2xf32>, index, index) -> tensor<2xf32>
  %b = shard.recv %x on @g grid_axes = [0, 1] source = [1, %q]
    : (tensor<2xf32>, index) -> tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

shard.grid @g(shape = 2x2)

// CHECK-LABEL: func.func @constant_destination
// CHECK: = shard.send
func.func @constant_destination(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %a = shard.send %x on @g grid_axes = [0, 1] destination = [%c0, %c2]
    : (tensor<2xf32>, index, index) -> tensor<2xf32>
  return %a : tensor<2xf32>
}

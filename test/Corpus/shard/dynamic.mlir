// Kinds of upstream's Shard tests with dynamic sizes (its ops.mlir,
// resharding-partition.mlir, all-scatter-op-lowering.mlir and
// process-multi-index-op-lowering.mlir), written here: collectives on
// tensors of dynamic shape, grids with one or several dynamic extents (a
// run gives the first the ranks the static extents leave, the others 1),
// and the point-to-point ops. An entry whose own signature is dynamic
// compiles; overlap-run runs static signatures only, so those are checked
// against numpy in python/tests/test_dynamic_*.py instead.

shard.grid @g(shape = 2x2x2)

func.func @all_gather_dynamic_tensor_f32(%a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = shard.all_gather %a on @g grid_axes = [2] gather_axis = 1
    : tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

shard.grid @g(shape = 2)

func.func @unshard_dynamic_rows_f32(%a: tensor<?x6xf32>) -> tensor<?x6xf32> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %a to %s : tensor<?x6xf32>
  %r = shard.sharding @g split_axes = [[]] : !shard.sharding
  %1 = shard.shard %0 to %r annotate_for_users : tensor<?x6xf32>
  return %1 : tensor<?x6xf32>
}

// -----

shard.grid @g(shape = 2)

func.func @move_split_dynamic_rows_i32(%a: tensor<?x6xi32>) -> tensor<?x3xi32> {
  %0 = shard.all_to_all %a on @g grid_axes = [0] split_axis = 1 concat_axis = 0
    : tensor<?x6xi32> -> tensor<?x3xi32>
  return %0 : tensor<?x3xi32>
}

// -----

shard.grid @g(shape = ?)

func.func @all_slice_dynamic_grid_f32(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %0 = shard.all_slice %a on @g grid_axes = [0] slice_axis = 0
    : tensor<?x3xf32> -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// Static signature on a dynamic grid: overlap-run runs it (2 ranks).
shard.grid @g(shape = ?x?)

func.func @reduce_on_two_dynamic_extents_f32(%a: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = shard.all_reduce %a on @g grid_axes = [0, 1]
    : tensor<4x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

shard.grid @g(shape = 2x?)

func.func @exchange_on_dynamic_axis_f32(%a: tensor<6x2xf32>) -> tensor<?x?xf32> {
  %0 = shard.all_to_all %a on @g grid_axes = [1] split_axis = 0 concat_axis = 1
    : tensor<6x2xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

shard.grid @g(shape = ?x?)

func.func @multi_index_two_dynamic_extents() -> (index, index, index, index) {
  %i:2 = shard.process_multi_index on @g : index, index
  %e:2 = shard.grid_shape @g : index, index
  return %i#0, %i#1, %e#0, %e#1 : index, index, index, index
}

// -----

shard.grid @g(shape = 2x2)

func.func @send_static_destination_i8(%a: tensor<2xi8>) -> tensor<2xi8> {
  %0 = shard.send %a on @g grid_axes = [0, 1] destination = [0, 1]
    : (tensor<2xi8>) -> tensor<2xi8>
  return %0 : tensor<2xi8>
}

// -----

// A ring along one axis: send to the next rank, receive from the previous.
shard.grid @g(shape = 4)

func.func @send_recv_ring_f32(%a: tensor<3x2xf32>, %b: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %i = shard.process_linear_index on @g : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %n = arith.addi %i, %c1 : index
  %dst = arith.remui %n, %c4 : index
  %p = arith.addi %i, %c3 : index
  %src = arith.remui %p, %c4 : index
  %0 = shard.send %a on @g grid_axes = [0] destination = [%dst]
    : (tensor<3x2xf32>, index) -> tensor<3x2xf32>
  %1 = shard.recv %b on @g grid_axes = [0] source = [%src]
    : (tensor<3x2xf32>, index) -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}

// -----

// Declined with the reason: nothing is sent to it.
shard.grid @g(shape = 4)

func.func @recv_alone_f32(%b: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %0 = shard.recv %b on @g grid_axes = [0] source = [1]
    : (tensor<3x2xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

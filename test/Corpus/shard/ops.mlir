// Kinds of upstream's Shard op tests (its ops.mlir and process-index
// lowering tests), written here: the rooted collectives and shift, which
// shard-partition does not emit but programs write by hand; entries that
// take and return scalars (index, i8, f32); grids with a dynamic extent,
// which a run sets from its number of ranks; grid_shape alone. Rooted
// results are defined on the root only: each case returns what every rank
// has (a broadcast's, a scatter's, a shift's) or reads the root's value
// back through a broadcast.

shard.grid @g(shape = 2x2)

func.func @broadcast_2d_i8(%a: tensor<3x5xi8>) -> tensor<3x5xi8> {
  %0 = shard.broadcast %a on @g grid_axes = [1, 0] root = [1, 0]
    : (tensor<3x5xi8>) -> tensor<3x5xi8>
  return %0 : tensor<3x5xi8>
}

// -----

shard.grid @g(shape = 4)

func.func @scatter_f32(%a: tensor<8x3xf32>) -> tensor<2x3xf32> {
  %0 = shard.scatter %a on @g grid_axes = [0] scatter_axis = 0 root = [2]
    : (tensor<8x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

shard.grid @g(shape = 4)

// The root's gather, broadcast to every rank.
func.func @gather_then_broadcast_i32(%a: tensor<2x3xi32>) -> tensor<2x12xi32> {
  %0 = shard.gather %a on @g grid_axes = [0] gather_axis = 1 root = [3]
    : (tensor<2x3xi32>) -> tensor<2x12xi32>
  %1 = shard.broadcast %0 on @g grid_axes = [0] root = [3]
    : (tensor<2x12xi32>) -> tensor<2x12xi32>
  return %1 : tensor<2x12xi32>
}

// -----

shard.grid @g(shape = 2x2)

// A reduction into a wider type at the root, broadcast back.
func.func @reduce_i8_to_i32(%a: tensor<6xi8>) -> tensor<6xi32> {
  %0 = shard.reduce %a on @g grid_axes = [0, 1] reduction = max root = [0, 1]
    : (tensor<6xi8>) -> tensor<6xi32>
  %1 = shard.broadcast %0 on @g grid_axes = [0, 1] root = [0, 1]
    : (tensor<6xi32>) -> tensor<6xi32>
  return %1 : tensor<6xi32>
}

// -----

shard.grid @g(shape = 2x3)

func.func @shift_rotate_f64(%a: tensor<4xf64>) -> tensor<4xf64> {
  %0 = shard.shift %a on @g grid_axes = [1] shift_axis = 1 offset = 2 rotate
    : tensor<4xf64> -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

shard.grid @g(shape = 4)

func.func @shift_edge_i64(%a: tensor<2x2xi64>) -> tensor<2x2xi64> {
  %0 = shard.shift %a on @g grid_axes = [0] shift_axis = 0 offset = -1
    : tensor<2x2xi64> -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// -----

shard.grid @g(shape = 2x?)

// Scalars in and out; the dynamic extent from the number of ranks.
func.func @scalar_index_dynamic_grid(%i: index, %k: i8) -> (index, index, i8) {
  %0:2 = shard.process_multi_index on @g : index, index
  %1 = shard.grid_shape @g axes = [1] : index
  %2 = arith.muli %0#1, %1 : index
  %3 = arith.addi %2, %i : index
  %4 = arith.addi %k, %k : i8
  return %3, %0#0, %4 : index, index, i8
}

// -----

shard.grid @g(shape = 3x2)

func.func @grid_shape_only() -> (index, index) {
  %0:2 = shard.grid_shape @g axes = [1, 0] : index, index
  return %0#0, %0#1 : index, index
}

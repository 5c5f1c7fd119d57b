// Kinds of upstream's resharding-partition tests, written here: a tensor
// moved between shardings on 1-D and 2-D grids (split axis moved: an
// all_to_all; split added: all_slice; split removed: all_gather; a grid
// axis moved between tensor dims), in f32, i8 and i64.

shard.grid @g4(shape = 4)

func.func @split_to_replicated_f32(%a: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %s = shard.sharding @g4 split_axes = [[0]] : !shard.sharding
  %r = shard.sharding @g4 split_axes = [[]] : !shard.sharding
  %0 = shard.shard %a to %s : tensor<16x8xf32>
  %1 = shard.shard %0 to %r annotate_for_users : tensor<16x8xf32>
  return %1 : tensor<16x8xf32>
}

// -----

shard.grid @g4(shape = 4)

func.func @replicated_to_split_i64(%a: tensor<16x8xi64>) -> tensor<16x8xi64> {
  %s = shard.sharding @g4 split_axes = [[], [0]] : !shard.sharding
  %r = shard.sharding @g4 split_axes = [[]] : !shard.sharding
  %0 = shard.shard %a to %r : tensor<16x8xi64>
  %1 = shard.shard %0 to %s annotate_for_users : tensor<16x8xi64>
  return %1 : tensor<16x8xi64>
}

// -----

shard.grid @g4(shape = 4)

func.func @move_split_axis_f32(%a: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %s0 = shard.sharding @g4 split_axes = [[0]] : !shard.sharding
  %s1 = shard.sharding @g4 split_axes = [[], [0]] : !shard.sharding
  %0 = shard.shard %a to %s0 : tensor<16x8xf32>
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<16x8xf32>
  return %1 : tensor<16x8xf32>
}

// -----

shard.grid @g22(shape = 2x2)

func.func @grid_2d_gather_one_axis_f32(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s0 = shard.sharding @g22 split_axes = [[0], [1]] : !shard.sharding
  %s1 = shard.sharding @g22 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %a to %s0 : tensor<8x8xf32>
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}

// -----

shard.grid @g22(shape = 2x2)

func.func @grid_2d_swap_axes_i8(%a: tensor<8x8xi8>) -> tensor<8x8xi8> {
  %s0 = shard.sharding @g22 split_axes = [[0], [1]] : !shard.sharding
  %s1 = shard.sharding @g22 split_axes = [[1], [0]] : !shard.sharding
  %0 = shard.shard %a to %s0 : tensor<8x8xi8>
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<8x8xi8>
  return %1 : tensor<8x8xi8>
}

// -----

shard.grid @g22(shape = 2x2)

func.func @grid_2d_both_axes_one_dim_f32(%a: tensor<16x4xf32>) -> tensor<16x4xf32> {
  %s0 = shard.sharding @g22 split_axes = [[0, 1]] : !shard.sharding
  %r = shard.sharding @g22 split_axes = [[]] : !shard.sharding
  %0 = shard.shard %a to %s0 : tensor<16x4xf32>
  %1 = shard.shard %0 to %r annotate_for_users : tensor<16x4xf32>
  return %1 : tensor<16x4xf32>
}

// Kinds of upstream's Shard partition tests, written here: TOSA
// elementwise ops on split and replicated operands, with reshardings
// between them, in i8, i32 and f32.

shard.grid @g2(shape = 2)

func.func @tosa_abs_split_i8(%a: tensor<8xi8>) -> tensor<8xi8> {
  %s = shard.sharding @g2 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %a to %s : tensor<8xi8>
  %1 = shard.shard %0 to %s annotate_for_users : tensor<8xi8>
  %2 = tosa.abs %1 : (tensor<8xi8>) -> tensor<8xi8>
  %3 = shard.shard %2 to %s : tensor<8xi8>
  %4 = shard.shard %3 to %s annotate_for_users : tensor<8xi8>
  return %4 : tensor<8xi8>
}

// -----

shard.grid @g2(shape = 2)

func.func @tosa_abs_split_f32(%a: tensor<8xf32>) -> tensor<8xf32> {
  %s = shard.sharding @g2 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %a to %s : tensor<8xf32>
  %1 = shard.shard %0 to %s annotate_for_users : tensor<8xf32>
  %2 = tosa.abs %1 : (tensor<8xf32>) -> tensor<8xf32>
  %3 = shard.shard %2 to %s : tensor<8xf32>
  %4 = shard.shard %3 to %s annotate_for_users : tensor<8xf32>
  return %4 : tensor<8xf32>
}

// -----

shard.grid @g2(shape = 2)

func.func @tosa_add_split_i32(%a: tensor<6x4xi32>, %b: tensor<6x4xi32>) -> tensor<6x4xi32> {
  %s = shard.sharding @g2 split_axes = [[0]] : !shard.sharding
  %a0 = shard.shard %a to %s : tensor<6x4xi32>
  %a1 = shard.shard %a0 to %s annotate_for_users : tensor<6x4xi32>
  %b0 = shard.shard %b to %s : tensor<6x4xi32>
  %b1 = shard.shard %b0 to %s annotate_for_users : tensor<6x4xi32>
  %c = tosa.add %a1, %b1 : (tensor<6x4xi32>, tensor<6x4xi32>) -> tensor<6x4xi32>
  %c0 = shard.shard %c to %s : tensor<6x4xi32>
  %c1 = shard.shard %c0 to %s annotate_for_users : tensor<6x4xi32>
  return %c1 : tensor<6x4xi32>
}

// -----

shard.grid @g2(shape = 2)

func.func @tosa_add_split_f32(%a: tensor<6x4xf32>, %b: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %s = shard.sharding @g2 split_axes = [[0]] : !shard.sharding
  %a0 = shard.shard %a to %s : tensor<6x4xf32>
  %a1 = shard.shard %a0 to %s annotate_for_users : tensor<6x4xf32>
  %b0 = shard.shard %b to %s : tensor<6x4xf32>
  %b1 = shard.shard %b0 to %s annotate_for_users : tensor<6x4xf32>
  %c = tosa.add %a1, %b1 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  %c0 = shard.shard %c to %s : tensor<6x4xf32>
  %c1 = shard.shard %c0 to %s annotate_for_users : tensor<6x4xf32>
  return %c1 : tensor<6x4xf32>
}

// -----

shard.grid @g2(shape = 2)

func.func @tosa_tanh_reshard_f32(%a: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %r = shard.sharding @g2 split_axes = [[]] : !shard.sharding
  %s = shard.sharding @g2 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %a to %r : tensor<4x6xf32>
  %1 = shard.shard %0 to %s annotate_for_users : tensor<4x6xf32>
  %2 = tosa.tanh %1 : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %3 = shard.shard %2 to %s : tensor<4x6xf32>
  %4 = shard.shard %3 to %r annotate_for_users : tensor<4x6xf32>
  return %4 : tensor<4x6xf32>
}

// -----

shard.grid @g2(shape = 2)

func.func @tosa_abs_reshard_i8(%a: tensor<4xi8>) -> tensor<4xi8> {
  %r = shard.sharding @g2 split_axes = [[]] : !shard.sharding
  %s = shard.sharding @g2 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %a to %r : tensor<4xi8>
  %1 = shard.shard %0 to %s annotate_for_users : tensor<4xi8>
  %2 = tosa.abs %1 : (tensor<4xi8>) -> tensor<4xi8>
  %3 = shard.shard %2 to %s : tensor<4xi8>
  %4 = shard.shard %3 to %r annotate_for_users : tensor<4xi8>
  return %4 : tensor<4xi8>
}

// -----

shard.grid @g2(shape = 2)

func.func @tosa_sigmoid_incomplete_f32(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %s = shard.sharding @g2 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %a to %s annotate_for_users : tensor<8x16xf32>
  %1 = tosa.sigmoid %0 : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %2 = shard.shard %1 to %s : tensor<8x16xf32>
  %3 = shard.shard %2 to %s annotate_for_users : tensor<8x16xf32>
  return %3 : tensor<8x16xf32>
}

// -----

shard.grid @g2(shape = 2)

func.func @tosa_negate_zero_points_f32(%a: tensor<8x4xf32>, %z0: tensor<1xf32>, %z1: tensor<1xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @g2 split_axes = [[0]] : !shard.sharding
  %r = shard.sharding @g2 split_axes = [[]] : !shard.sharding
  %0 = shard.shard %a to %s annotate_for_users : tensor<8x4xf32>
  %y0 = shard.shard %z0 to %r annotate_for_users : tensor<1xf32>
  %y1 = shard.shard %z1 to %r annotate_for_users : tensor<1xf32>
  %1 = tosa.negate %0, %y0, %y1 : (tensor<8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x4xf32>
  %2 = shard.shard %1 to %s : tensor<8x4xf32>
  %3 = shard.shard %2 to %s annotate_for_users : tensor<8x4xf32>
  return %3 : tensor<8x4xf32>
}

// -----

// corpus: partitioned (upstream's shard-partition crashes on math.exp of a
// sharded tensor: MLIR 22, the annotated form). Elementwise arith and math
// on whole tensors, then a gather.
shard.grid @g2(shape = 2)

func.func @arith_on_tensors_f32(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %c = arith.mulf %a, %b : tensor<4x4xf32>
  %d = math.exp %c : tensor<4x4xf32>
  %e = arith.subf %d, %a : tensor<4x4xf32>
  %g = shard.all_gather %e on @g2 grid_axes = [0] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
  return %g : tensor<8x4xf32>
}

// -----

func.func @scalar_i8(%a: i8) -> i8 {
  %0 = arith.addi %a, %a : i8
  return %0 : i8
}

// -----

shard.grid @g2(shape = 2)

func.func @replicated_i8(%a: tensor<2xi8>) -> tensor<2xi8> {
  %r = shard.sharding @g2 split_axes = [[]] : !shard.sharding
  %0 = shard.shard %a to %r : tensor<2xi8>
  %1 = shard.shard %0 to %r annotate_for_users : tensor<2xi8>
  return %1 : tensor<2xi8>
}

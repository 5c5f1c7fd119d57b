// Kinds of upstream's Linalg shard-partition tests, written here:
// elementwise linalg.generic on split operands, matmuls split along a
// parallel dimension (no collective), along the reduction (an all-reduce
// after the partial products: the form Overlap fuses), along the last
// axis of a replicated result (all_slice, then all_gather), in i8, i32 and
// f32, and a matmul on a 2-D grid.

#id1 = affine_map<(d0) -> (d0)>
shard.grid @g2(shape = 2)

func.func @generic_mul_i8(%a: tensor<8xi8>, %b: tensor<8xi8>, %o: tensor<8xi8>) -> tensor<8xi8> {
  %s = shard.sharding @g2 split_axes = [[0]] : !shard.sharding
  %a0 = shard.shard %a to %s : tensor<8xi8>
  %a1 = shard.shard %a0 to %s annotate_for_users : tensor<8xi8>
  %b0 = shard.shard %b to %s : tensor<8xi8>
  %b1 = shard.shard %b0 to %s annotate_for_users : tensor<8xi8>
  %o0 = shard.shard %o to %s : tensor<8xi8>
  %o1 = shard.shard %o0 to %s annotate_for_users : tensor<8xi8>
  %r = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]}
      ins(%a1, %b1 : tensor<8xi8>, tensor<8xi8>) outs(%o1 : tensor<8xi8>) {
    ^bb0(%x: i8, %y: i8, %z: i8):
      %m = arith.muli %x, %y : i8
      linalg.yield %m : i8
    } -> tensor<8xi8>
  %r0 = shard.shard %r to %s : tensor<8xi8>
  %r1 = shard.shard %r0 to %s annotate_for_users : tensor<8xi8>
  return %r1 : tensor<8xi8>
}

// -----

shard.grid @g4(shape = 4)

func.func @matmul_split_m_i8(%a: tensor<8x3xi8>, %b: tensor<3x8xi8>, %o: tensor<8x8xi8>) -> tensor<8x8xi8> {
  %s = shard.sharding @g4 split_axes = [[0]] : !shard.sharding
  %r = shard.sharding @g4 split_axes = [[]] : !shard.sharding
  %a0 = shard.shard %a to %s : tensor<8x3xi8>
  %a1 = shard.shard %a0 to %s annotate_for_users : tensor<8x3xi8>
  %b0 = shard.shard %b to %r : tensor<3x8xi8>
  %b1 = shard.shard %b0 to %r annotate_for_users : tensor<3x8xi8>
  %o0 = shard.shard %o to %s : tensor<8x8xi8>
  %o1 = shard.shard %o0 to %s annotate_for_users : tensor<8x8xi8>
  %m = linalg.matmul ins(%a1, %b1 : tensor<8x3xi8>, tensor<3x8xi8>) outs(%o1 : tensor<8x8xi8>) -> tensor<8x8xi8>
  %m0 = shard.shard %m to %s : tensor<8x8xi8>
  %m1 = shard.shard %m0 to %s annotate_for_users : tensor<8x8xi8>
  return %m1 : tensor<8x8xi8>
}

// -----

shard.grid @g3(shape = 3)

func.func @matmul_split_k_i8(%a: tensor<4x6xi8>, %b: tensor<6x8xi8>, %o: tensor<4x8xi8>) -> tensor<4x8xi8> {
  %sk = shard.sharding @g3 split_axes = [[], [0]] : !shard.sharding
  %sk2 = shard.sharding @g3 split_axes = [[0]] : !shard.sharding
  %r = shard.sharding @g3 split_axes = [[]] : !shard.sharding
  %a0 = shard.shard %a to %sk : tensor<4x6xi8>
  %a1 = shard.shard %a0 to %sk annotate_for_users : tensor<4x6xi8>
  %b0 = shard.shard %b to %sk2 : tensor<6x8xi8>
  %b1 = shard.shard %b0 to %sk2 annotate_for_users : tensor<6x8xi8>
  %o0 = shard.shard %o to %r : tensor<4x8xi8>
  %o1 = shard.shard %o0 to %r annotate_for_users : tensor<4x8xi8>
  %m = linalg.matmul ins(%a1, %b1 : tensor<4x6xi8>, tensor<6x8xi8>) outs(%o1 : tensor<4x8xi8>) -> tensor<4x8xi8>
  %m0 = shard.shard %m to %r : tensor<4x8xi8>
  %m1 = shard.shard %m0 to %r annotate_for_users : tensor<4x8xi8>
  return %m1 : tensor<4x8xi8>
}

// -----

shard.grid @g2(shape = 2)

func.func @matmul_split_k_f32(%a: tensor<256x64xf32>, %b: tensor<64x64xf32>, %o: tensor<256x64xf32>) -> tensor<256x64xf32> {
  %sk = shard.sharding @g2 split_axes = [[], [0]] : !shard.sharding
  %sk2 = shard.sharding @g2 split_axes = [[0]] : !shard.sharding
  %r = shard.sharding @g2 split_axes = [[]] : !shard.sharding
  %a0 = shard.shard %a to %sk : tensor<256x64xf32>
  %a1 = shard.shard %a0 to %sk annotate_for_users : tensor<256x64xf32>
  %b0 = shard.shard %b to %sk2 : tensor<64x64xf32>
  %b1 = shard.shard %b0 to %sk2 annotate_for_users : tensor<64x64xf32>
  %o0 = shard.shard %o to %r : tensor<256x64xf32>
  %o1 = shard.shard %o0 to %r annotate_for_users : tensor<256x64xf32>
  %m = linalg.matmul ins(%a1, %b1 : tensor<256x64xf32>, tensor<64x64xf32>) outs(%o1 : tensor<256x64xf32>) -> tensor<256x64xf32>
  %m0 = shard.shard %m to %r : tensor<256x64xf32>
  %m1 = shard.shard %m0 to %r annotate_for_users : tensor<256x64xf32>
  return %m1 : tensor<256x64xf32>
}

// -----

shard.grid @g4(shape = 4)

func.func @matmul_split_last_axis_i8(%a: tensor<4x6xi8>, %b: tensor<6x8xi8>, %o: tensor<4x8xi8>) -> tensor<4x8xi8> {
  %r = shard.sharding @g4 split_axes = [[], []] : !shard.sharding
  %s = shard.sharding @g4 split_axes = [[], [0]] : !shard.sharding
  %a0 = shard.shard %a to %r : tensor<4x6xi8>
  %a1 = shard.shard %a0 to %r annotate_for_users : tensor<4x6xi8>
  %b0 = shard.shard %b to %r : tensor<6x8xi8>
  %b1 = shard.shard %b0 to %s annotate_for_users : tensor<6x8xi8>
  %o0 = shard.shard %o to %r : tensor<4x8xi8>
  %o1 = shard.shard %o0 to %s annotate_for_users : tensor<4x8xi8>
  %m = linalg.matmul ins(%a1, %b1 : tensor<4x6xi8>, tensor<6x8xi8>) outs(%o1 : tensor<4x8xi8>) -> tensor<4x8xi8>
  %m0 = shard.shard %m to %s : tensor<4x8xi8>
  %m1 = shard.shard %m0 to %r annotate_for_users : tensor<4x8xi8>
  return %m1 : tensor<4x8xi8>
}

// -----

shard.grid @g4(shape = 4)

func.func @matmul_split_last_axis_f32(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %o: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %r = shard.sharding @g4 split_axes = [[], []] : !shard.sharding
  %s = shard.sharding @g4 split_axes = [[], [0]] : !shard.sharding
  %a0 = shard.shard %a to %r : tensor<16x32xf32>
  %a1 = shard.shard %a0 to %r annotate_for_users : tensor<16x32xf32>
  %b0 = shard.shard %b to %r : tensor<32x64xf32>
  %b1 = shard.shard %b0 to %s annotate_for_users : tensor<32x64xf32>
  %o0 = shard.shard %o to %r : tensor<16x64xf32>
  %o1 = shard.shard %o0 to %s annotate_for_users : tensor<16x64xf32>
  %m = linalg.matmul ins(%a1, %b1 : tensor<16x32xf32>, tensor<32x64xf32>) outs(%o1 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %m0 = shard.shard %m to %s : tensor<16x64xf32>
  %m1 = shard.shard %m0 to %r annotate_for_users : tensor<16x64xf32>
  return %m1 : tensor<16x64xf32>
}

// -----

shard.grid @g22(shape = 2x2)

func.func @matmul_2d_grid_f32(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %o: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %sa = shard.sharding @g22 split_axes = [[0], [1]] : !shard.sharding
  %sb = shard.sharding @g22 split_axes = [[1]] : !shard.sharding
  %so = shard.sharding @g22 split_axes = [[0]] : !shard.sharding
  %a0 = shard.shard %a to %sa : tensor<256x64xf32>
  %a1 = shard.shard %a0 to %sa annotate_for_users : tensor<256x64xf32>
  %b0 = shard.shard %b to %sb : tensor<64x32xf32>
  %b1 = shard.shard %b0 to %sb annotate_for_users : tensor<64x32xf32>
  %o0 = shard.shard %o to %so : tensor<256x32xf32>
  %o1 = shard.shard %o0 to %so annotate_for_users : tensor<256x32xf32>
  %m = linalg.matmul ins(%a1, %b1 : tensor<256x64xf32>, tensor<64x32xf32>) outs(%o1 : tensor<256x32xf32>) -> tensor<256x32xf32>
  %m0 = shard.shard %m to %so : tensor<256x32xf32>
  %m1 = shard.shard %m0 to %so annotate_for_users : tensor<256x32xf32>
  return %m1 : tensor<256x32xf32>
}

// -----

shard.grid @g2(shape = 2)

func.func @fill_and_add_i32(%a: tensor<6x4xi32>) -> tensor<6x4xi32> {
  %s = shard.sharding @g2 split_axes = [[0]] : !shard.sharding
  %c = arith.constant 7 : i32
  %e = tensor.empty() : tensor<6x4xi32>
  %f = linalg.fill ins(%c : i32) outs(%e : tensor<6x4xi32>) -> tensor<6x4xi32>
  %f0 = shard.shard %f to %s : tensor<6x4xi32>
  %f1 = shard.shard %f0 to %s annotate_for_users : tensor<6x4xi32>
  %a0 = shard.shard %a to %s : tensor<6x4xi32>
  %a1 = shard.shard %a0 to %s annotate_for_users : tensor<6x4xi32>
  %r = linalg.add ins(%a1, %f1 : tensor<6x4xi32>, tensor<6x4xi32>) outs(%e : tensor<6x4xi32>) -> tensor<6x4xi32>
  %r0 = shard.shard %r to %s : tensor<6x4xi32>
  %r1 = shard.shard %r0 to %s annotate_for_users : tensor<6x4xi32>
  return %r1 : tensor<6x4xi32>
}

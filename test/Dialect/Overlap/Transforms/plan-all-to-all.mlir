// RUN: overlap-opt %s --overlap-plan="profile=h100-nvlink-datasheet strategy=uniform:2" --remarks-filter=overlap -split-input-file -verify-diagnostics | FileCheck %s
// RUN: overlap-opt %s --overlap-plan="profile=h100-nvlink-datasheet strategy=uniform:4" --remarks-filter=overlap -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=FOUR --implicit-check-not="overlap-plan failed"
// RUN: overlap-opt %s --overlap-plan="profile=h100-nvlink-datasheet strategy=uniform:3" --remarks-filter=overlap -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=THREE --implicit-check-not="overlap-plan failed"

// overlap-plan on the all-to-all ops: the problem's M is every row the
// experts compute (G E Cap), with E experts per rank (problem.experts). A
// tile takes tiles[i] / (G E) tokens of every (rank, expert) block, so the
// Planner aligns tile boundaries to lcm(128, G E) rows: 128 with one expert
// on 4 ranks, 384 with three.

shard.grid @ep(shape = 4)

// One expert per rank: 512 tokens, blocks of 128 rows.
// CHECK-LABEL: func.func @dispatch_one
// CHECK: overlap.all_to_all_matmul
// CHECK-SAME: overlap.plan = #overlap.plan<tiles = [256, 256], strategy = "uniform:2"
// FOUR: Function=dispatch_one | Remark="tiles [128, 128, 128, 128] (uniform:4,
// With uniform:3 only combine_three fails: the others have 4 blocks for 3 tiles.
// THREE-NOT: op overlap-plan failed
func.func @dispatch_one(%x: tensor<512x32xf32>, %w: tensor<32x48xf32>, %c: tensor<512x48xf32>) -> tensor<512x48xf32> {
  // expected-remark @+1 {{tiles [256, 256] (uniform:2,}}
  %h = overlap.all_to_all_matmul %x, %w, %c on @ep grid_axes = [0]
      : tensor<512x32xf32>, tensor<32x48xf32>, tensor<512x48xf32> -> tensor<512x48xf32>
  return %h : tensor<512x48xf32>
}

// -----

shard.grid @ep(shape = 4)

// Three experts per rank, 128 tokens per block: M = 3 x 4 x 128 = 1536 in
// blocks of lcm(128, 12) = 384; uniform:2 gives 768-row tiles, 64 tokens of
// every block.
// CHECK-LABEL: func.func @dispatch_three
// CHECK: overlap.all_to_all_matmul
// CHECK-SAME: overlap.plan = #overlap.plan<tiles = [768, 768], strategy = "uniform:2"
// FOUR: Function=dispatch_three | Remark="tiles [384, 384, 384, 384] (uniform:4,
func.func @dispatch_three(%x: tensor<12x128x32xf32>, %w: tensor<3x32x48xf32>, %c: tensor<3x512x48xf32>) -> tensor<3x512x48xf32> {
  // expected-remark @+1 {{tiles [768, 768] (uniform:2,}}
  %h = overlap.all_to_all_matmul %x, %w, %c on @ep grid_axes = [0]
      : tensor<12x128x32xf32>, tensor<3x32x48xf32>, tensor<3x512x48xf32> -> tensor<3x512x48xf32>
  return %h : tensor<3x512x48xf32>
}

// -----

shard.grid @ep(shape = 4)

// Combine, three experts per rank: M = 3 x 4 x 64 = 768, which 384-row
// blocks split into two tiles at most: uniform:2 plans; uniform:3 and
// uniform:4 are honoured with 192-row blocks (still whole multiples of the
// 12 slots a tile needs), and the remark says so (they were errors).
// CHECK-LABEL: func.func @combine_three
// CHECK: overlap.matmul_all_to_all
// CHECK-SAME: overlap.plan = #overlap.plan<tiles = [384, 384], strategy = "uniform:2"
// FOUR: tiles [192, 192, 192, 192] (uniform:4, {{.*}} [uniform:4 needs 4 tiles of 384-row blocks but M = 768 has 2: honoured with 192-row blocks (smaller than the preferred 384)]
// THREE: tiles [384, 192, 192] (uniform:3, {{.*}} [uniform:3 needs 3 tiles of 384-row blocks but M = 768 has 2: honoured with 192-row blocks
func.func @combine_three(%h: tensor<3x256x48xbf16>, %w: tensor<3x48x32xbf16>, %c: tensor<3x256x32xf32>) -> tensor<12x64x32xf32> {
  // expected-remark @+1 {{tiles [384, 384] (uniform:2,}}
  %y = overlap.matmul_all_to_all %h, %w, %c on @ep grid_axes = [0]
      : tensor<3x256x48xbf16>, tensor<3x48x32xbf16>, tensor<3x256x32xf32> -> tensor<12x64x32xf32>
  return %y : tensor<12x64x32xf32>
}

// -----

shard.grid @ep(shape = 3x4)

// The group is the grid axes named: axis 1 has 4 ranks, so blocks are
// lcm(128, 4) = 128 rows (the whole grid, 12 ranks, would make them 384).
// CHECK-LABEL: func.func @axis_1
// CHECK: overlap.plan = #overlap.plan<tiles = [256, 256], strategy = "uniform:2"
// FOUR: Function=axis_1 | Remark="tiles [128, 128, 128, 128] (uniform:4,
func.func @axis_1(%x: tensor<512x32xf32>, %w: tensor<32x48xf32>, %c: tensor<512x48xf32>) -> tensor<512x48xf32> {
  // expected-remark @+1 {{tiles [256, 256] (uniform:2,}}
  %h = overlap.all_to_all_matmul %x, %w, %c on @ep grid_axes = [1]
      : tensor<512x32xf32>, tensor<32x48xf32>, tensor<512x48xf32> -> tensor<512x48xf32>
  return %h : tensor<512x48xf32>
}

// -----

shard.grid @dyn(shape = ?)

// CHECK-LABEL: func.func @dynamic_group
// CHECK-NOT: overlap.plan
func.func @dynamic_group(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>, %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  // expected-remark @+1 {{not planned: the group size of @dyn is not static; pass ranks=N to plan anyway}}
  %h = overlap.all_to_all_matmul %x, %w, %c on @dyn grid_axes = [0]
      : tensor<64x32xf32>, tensor<32x48xf32>, tensor<64x48xf32> -> tensor<64x48xf32>
  return %h : tensor<64x48xf32>
}

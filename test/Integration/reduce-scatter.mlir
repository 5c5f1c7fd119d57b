// matmul + reduce-scatter on host ranks: each rank keeps the sum of its
// block of rows; every plan must give the bits of the unsplit reference.
// Tile i takes tiles[i]/R rows of every rank's block, so tiles (and M) are
// multiples of R. Template: @R@ becomes the number of ranks (see
// all-reduce.mlir for the choice of profiles).
//
// RUN: sed -e 's/@R@/4/' -e 's/@Q1024@/256/g' -e 's/@Q712@/178/g' %s > %t.4.mlir
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mrs_f32 --strategy mc2 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=MC2,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mrs_f32 --profile %S/Inputs/slow-link.json --strategy optimal %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=OPT,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mrs_f32 --strategy uniform:4 --seed 11 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=UNI4,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mrs_bf16 --profile %S/Inputs/slow-link.json --strategy optimal %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=BF16,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mrs_bf16_acc --strategy uniform:3 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=BF16ACC,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mrs_uneven --strategy uniform:3 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=UNEVEN,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry upstream --strategy uniform:2 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=UPSTREAM,CHECK
// RUN: sed -e 's/@R@/1/' -e 's/@Q1024@/1024/g' -e 's/@Q712@/712/g' %s > %t.1.mlir
// RUN: overlap-run --remarks-filter=overlap --ranks 1 --entry mrs_f32 --strategy uniform:2 %t.1.mlir 2>&1 | FileCheck %s --check-prefixes=R1,CHECK
// RUN: sed -e 's/@R@/2/' -e 's/@Q1024@/512/g' -e 's/@Q712@/356/g' %s > %t.2.mlir
// RUN: overlap-run --remarks-filter=overlap --ranks 2 --entry mrs_f32 --profile %S/Inputs/slow-link.json --strategy optimal %t.2.mlir 2>&1 | FileCheck %s --check-prefixes=R2,CHECK
// RUN: sed -e 's/@R@/8/' -e 's/@Q1024@/128/g' -e 's/@Q712@/89/g' %s > %t.8.mlir
// RUN: overlap-run --remarks-filter=overlap --ranks 8 --entry mrs_f32 --strategy uniform:4 %t.8.mlir 2>&1 | FileCheck %s --check-prefixes=R8,CHECK

// MC2: Remark="tiles [1024] (mc2, {{.*}}one tile, no overlap wins
// A tile below M is one batched GEMM of R matrices of tiles[i]/R rows, and
// slow-link's GEMM tile has 128 rows: optimal keeps tiles[i]/R a multiple
// of 128, since a smaller piece still costs a whole 128-row tile.
// OPT: Remark="tiles [512, 512] (optimal,
// UNI4: Remark="tiles [256, 256, 256, 256] (uniform:4,
// mrs_bf16's C is an argument, not a fill: each tile's rows of it are
// copied into the tile's packed buffer on the compute stream, which the
// Planner prices at slow-link's memory bandwidth (CostModel::copyUs); the
// longer second tile then hides the last reduce-scatter better.
// BF16: Remark="tiles [256, 768] (optimal,
// BF16ACC: Remark="tiles [384, 384, 256] (uniform:3,
// M = 712 is not a multiple of the 128-row alignment: the last tile takes
// the remainder (712 = 256 + 256 + 200; 200 rows = 50 per rank).
// UNEVEN: Remark="tiles [256, 256, 200] (uniform:3,
// UPSTREAM: Remark="tiles [512, 512] (uniform:2,
// R1: Remark="tiles [512, 512] (uniform:2,
// (slow-link prices the copies of C's rows at its 50 GB/s: 0.2 MiB a tile.)
// R2: Remark="tiles [256, 256, 512] (optimal,
// R8: Remark="tiles [256, 256, 256, 256] (uniform:4,

// CHECK: overlap-run: @{{[a-z0-9_]+}} on {{[0-9]+}} host rank
// CHECK: result0 {{.*}} max abs err 0 {{.*}} bit-identical
// CHECK: bit-identical: yes
// CHECK-NEXT: OK

shard.grid @tp(shape = @R@)

// @Q1024@ and @Q712@ are 1024 / R and 712 / R.
func.func @mrs_f32(%a: tensor<1024x256xf32>, %b: tensor<256x256xf32>, %c: tensor<1024x256xf32>) -> tensor<@Q1024@x256xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<1024x256xf32>, tensor<256x256xf32>, tensor<1024x256xf32> -> tensor<@Q1024@x256xf32>
  return %r : tensor<@Q1024@x256xf32>
}

// bf16 factors, f32 accumulator.
func.func @mrs_bf16(%a: tensor<1024x256xbf16>, %b: tensor<256x256xbf16>, %c: tensor<1024x256xf32>) -> tensor<@Q1024@x256xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<1024x256xbf16>, tensor<256x256xbf16>, tensor<1024x256xf32> -> tensor<@Q1024@x256xf32>
  return %r : tensor<@Q1024@x256xf32>
}

// bf16 throughout.
func.func @mrs_bf16_acc(%a: tensor<1024x128xbf16>, %b: tensor<128x256xbf16>, %c: tensor<1024x256xbf16>) -> tensor<@Q1024@x256xbf16> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<1024x128xbf16>, tensor<128x256xbf16>, tensor<1024x256xbf16> -> tensor<@Q1024@x256xbf16>
  return %r : tensor<@Q1024@x256xbf16>
}

func.func @mrs_uneven(%a: tensor<712x128xf32>, %b: tensor<128x96xf32>, %c: tensor<712x96xf32>) -> tensor<@Q712@x96xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<712x128xf32>, tensor<128x96xf32>, tensor<712x96xf32> -> tensor<@Q712@x96xf32>
  return %r : tensor<@Q712@x96xf32>
}

// Upstream form: overlap-raise fuses the matmul with the row-wise
// shard.reduce_scatter.
func.func @upstream(%a: tensor<1024x128xf32>, %b: tensor<128x128xf32>) -> tensor<@Q1024@x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x128xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x128xf32>) -> tensor<1024x128xf32>
  %p = linalg.matmul ins(%a, %b : tensor<1024x128xf32>, tensor<128x128xf32>) outs(%c : tensor<1024x128xf32>) -> tensor<1024x128xf32>
  %r = shard.reduce_scatter %p on @tp grid_axes = [0] scatter_axis = 0 : tensor<1024x128xf32> -> tensor<@Q1024@x128xf32>
  return %r : tensor<@Q1024@x128xf32>
}

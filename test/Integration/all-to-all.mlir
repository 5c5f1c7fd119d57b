// Expert parallelism on host ranks: upstream shard.all_to_all + linalg
// programs (dispatch -> experts' matmul -> ReLU -> experts' matmul ->
// combine) raise, plan, decompose and run; every plan must give the bits
// of the unsplit reference. A tile takes tiles[i] / (R x E) tokens of
// every (rank, expert) block, so the 128-row alignment of the profile
// becomes a multiple of R x E. Template: @R@ ranks, @T@ = 128 R tokens
// (one expert per rank), @E2@ = 2 R experts and @T64@ = 64 R tokens per
// expert (two experts per rank), @E3@ = 3 R experts.
//
// RUN: sed -e 's/@R@/4/g' -e 's/@T@/512/g' -e 's/@E2@/8/g' -e 's/@T64@/256/g' -e 's/@E3@/12/g' %s > %t.4.mlir
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry moe_one --strategy uniform:2 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=ONE2,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry moe_one --strategy uniform:3 --seed 7 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=ONE3,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry moe_one --strategy uniform:4 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=ONE4,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry moe_one --profile %S/Inputs/slow-link.json --strategy auto %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=AUTO,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry moe_experts --strategy uniform:2 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=EXP2,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry moe_experts --strategy uniform:3 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=EXP3,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry moe_experts --strategy uniform:4 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=EXP4,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry moe_experts --profile %S/Inputs/slow-link.json --strategy optimal %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=OPT,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry combine_bf16 --strategy uniform:3 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=BF16,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry dispatch_three --strategy uniform:2 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=THREE,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry dispatch_three --profile %S/Inputs/slow-link.json --strategy mc2 %t.4.mlir 2>&1 | FileCheck %s --check-prefix=CHECK
// RUN: sed -e 's/@R@/2/g' -e 's/@T@/256/g' -e 's/@E2@/4/g' -e 's/@T64@/128/g' -e 's/@E3@/6/g' %s > %t.2.mlir
// RUN: overlap-run --remarks-filter=overlap --ranks 2 --entry moe_one --strategy uniform:2 %t.2.mlir 2>&1 | FileCheck %s --check-prefixes=R2,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 2 --entry moe_experts --strategy uniform:2 %t.2.mlir 2>&1 | FileCheck %s --check-prefix=CHECK
// RUN: sed -e 's/@R@/8/g' -e 's/@T@/1024/g' -e 's/@E2@/16/g' -e 's/@T64@/512/g' -e 's/@E3@/24/g' %s > %t.8.mlir
// RUN: overlap-run --remarks-filter=overlap --ranks 8 --entry moe_one --strategy uniform:4 %t.8.mlir 2>&1 | FileCheck %s --check-prefixes=R8,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 8 --entry moe_experts --strategy uniform:3 %t.8.mlir 2>&1 | FileCheck %s --check-prefix=CHECK

// Both all-to-alls of each layer are raised and planned alike.
// ONE2-COUNT-2: Remark="tiles [256, 256] (uniform:2,
// ONE3-COUNT-2: Remark="tiles [256, 128, 128] (uniform:3,
// ONE4-COUNT-2: Remark="tiles [128, 128, 128, 128] (uniform:4,
// AUTO-COUNT-2: Remark="tiles [{{[0-9, ]+}}] (
// EXP2-COUNT-2: Remark="tiles [256, 256] (uniform:2,
// EXP3-COUNT-2: Remark="tiles [256, 128, 128] (uniform:3,
// EXP4-COUNT-2: Remark="tiles [128, 128, 128, 128] (uniform:4,
// OPT-COUNT-2: Remark="tiles [{{[0-9, ]+}}] (optimal,
// BF16: Remark="tiles [256, 128, 128] (uniform:3,
// Three experts per rank: M = 3 x 4 x 64 = 768 rows in blocks of
// lcm(128, 12) = 384.
// THREE: Remark="tiles [384, 384] (uniform:2,
// R2-COUNT-2: Remark="tiles [128, 128] (uniform:2,
// R8-COUNT-2: Remark="tiles [256, 256, 256, 256] (uniform:4,

// CHECK: overlap-run: @{{[a-z0-9_]+}} on {{[0-9]+}} host rank
// CHECK: result0 {{.*}} max abs err 0 {{.*}} bit-identical
// CHECK: bit-identical: yes

shard.grid @ep(shape = @R@)

#id3 = affine_map<(e, i, j) -> (e, i, j)>
#id2 = affine_map<(i, j) -> (i, j)>

// One expert per rank: 128 tokens for each rank's expert.
func.func @moe_one(%x: tensor<@T@x32xf32>, %w1: tensor<32x64xf32>,
                   %w2: tensor<64x32xf32>) -> tensor<@T@x32xf32> {
  %zero = arith.constant 0.0 : f32
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<@T@x32xf32> -> tensor<@T@x32xf32>
  %e1 = tensor.empty() : tensor<@T@x64xf32>
  %c1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<@T@x64xf32>) -> tensor<@T@x64xf32>
  %h = linalg.matmul ins(%t, %w1 : tensor<@T@x32xf32>, tensor<32x64xf32>)
                     outs(%c1 : tensor<@T@x64xf32>) -> tensor<@T@x64xf32>
  %a = linalg.generic {indexing_maps = [#id2, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<@T@x64xf32>) outs(%e1 : tensor<@T@x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
  } -> tensor<@T@x64xf32>
  %e2 = tensor.empty() : tensor<@T@x32xf32>
  %c2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<@T@x32xf32>) -> tensor<@T@x32xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<@T@x64xf32>, tensor<64x32xf32>)
                     outs(%c2 : tensor<@T@x32xf32>) -> tensor<@T@x32xf32>
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 0 concat_axis = 0
      : tensor<@T@x32xf32> -> tensor<@T@x32xf32>
  return %z : tensor<@T@x32xf32>
}

// Two experts per rank, 64 tokens from every rank for each; the first
// matmul accumulates into a C that is an argument (not a fill).
func.func @moe_experts(%x: tensor<@E2@x64x32xf32>, %w1: tensor<2x32x48xf32>,
                       %c1: tensor<2x@T64@x48xf32>, %w2: tensor<2x48x32xf32>)
    -> tensor<@E2@x64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 1
      : tensor<@E2@x64x32xf32> -> tensor<2x@T64@x32xf32>
  %h = linalg.batch_matmul ins(%t, %w1 : tensor<2x@T64@x32xf32>, tensor<2x32x48xf32>)
                           outs(%c1 : tensor<2x@T64@x48xf32>) -> tensor<2x@T64@x48xf32>
  %e1 = tensor.empty() : tensor<2x@T64@x48xf32>
  %a = linalg.generic {indexing_maps = [#id3, #id3],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%h : tensor<2x@T64@x48xf32>) outs(%e1 : tensor<2x@T64@x48xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %zero : f32
      linalg.yield %r : f32
  } -> tensor<2x@T64@x48xf32>
  %e2 = tensor.empty() : tensor<2x@T64@x32xf32>
  %c2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x@T64@x32xf32>) -> tensor<2x@T64@x32xf32>
  %y = linalg.batch_matmul ins(%a, %w2 : tensor<2x@T64@x48xf32>, tensor<2x48x32xf32>)
                           outs(%c2 : tensor<2x@T64@x32xf32>) -> tensor<2x@T64@x32xf32>
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 1 concat_axis = 0
      : tensor<2x@T64@x32xf32> -> tensor<@E2@x64x32xf32>
  return %z : tensor<@E2@x64x32xf32>
}

// Combine alone, bf16 factors accumulated in f32.
func.func @combine_bf16(%h: tensor<2x@T64@x48xbf16>, %w2: tensor<2x48x32xbf16>)
    -> tensor<@E2@x64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x@T64@x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<2x@T64@x32xf32>) -> tensor<2x@T64@x32xf32>
  %y = linalg.batch_matmul ins(%h, %w2 : tensor<2x@T64@x48xbf16>, tensor<2x48x32xbf16>)
                           outs(%c : tensor<2x@T64@x32xf32>) -> tensor<2x@T64@x32xf32>
  %z = shard.all_to_all %y on @ep grid_axes = [0] split_axis = 1 concat_axis = 0
      : tensor<2x@T64@x32xf32> -> tensor<@E2@x64x32xf32>
  return %z : tensor<@E2@x64x32xf32>
}

// Dispatch alone, three experts per rank.
func.func @dispatch_three(%x: tensor<@E3@x64x32xf32>, %w: tensor<3x32x16xf32>)
    -> tensor<3x@T64@x16xf32> {
  %zero = arith.constant 0.0 : f32
  %t = shard.all_to_all %x on @ep grid_axes = [0] split_axis = 0 concat_axis = 1
      : tensor<@E3@x64x32xf32> -> tensor<3x@T64@x32xf32>
  %e = tensor.empty() : tensor<3x@T64@x16xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<3x@T64@x16xf32>) -> tensor<3x@T64@x16xf32>
  %y = linalg.batch_matmul ins(%t, %w : tensor<3x@T64@x32xf32>, tensor<3x32x16xf32>)
                           outs(%c : tensor<3x@T64@x16xf32>) -> tensor<3x@T64@x16xf32>
  return %y : tensor<3x@T64@x16xf32>
}

// matmul + all-reduce on host ranks: every plan must give the bits of the
// unsplit reference (one GEMM, then one all-reduce) on every rank.
//
// The grid size is the rank count, so this file is a template: @R@ becomes
// the number of ranks. Shapes are small so the host GEMM is fast; with
// them the datasheet profile makes mc2 (and optimal) keep one tile, so the
// multi-tile plans come from uniform:n and from optimal with the test
// profile Inputs/slow-link.json (a slow link that makes splitting pay).
//
// RUN: sed 's/@R@/4/' %s > %t.4.mlir
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mar_f32 --profile h100-nvlink-datasheet --strategy mc2 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=MC2,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mar_f32 --profile %S/Inputs/slow-link.json --strategy optimal %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=OPT,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mar_f32 --strategy uniform:4 --seed 7 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=UNI4,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mar_bf16 --profile %S/Inputs/slow-link.json --strategy optimal %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=BF16,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mar_bf16_acc --strategy uniform:3 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=BF16ACC,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mar_uneven --strategy uniform:3 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=UNEVEN,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry mar_uneven --strategy mc2 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=UNEVEN-MC2,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --entry upstream --strategy uniform:2 %t.4.mlir 2>&1 | FileCheck %s --check-prefixes=UPSTREAM,CHECK
// RUN: sed 's/@R@/1/' %s > %t.1.mlir
// RUN: overlap-run --remarks-filter=overlap --ranks 1 --entry mar_f32 --strategy uniform:2 %t.1.mlir 2>&1 | FileCheck %s --check-prefixes=R1,CHECK
// RUN: sed 's/@R@/2/' %s > %t.2.mlir
// RUN: overlap-run --remarks-filter=overlap --ranks 2 --entry mar_f32 --profile %S/Inputs/slow-link.json --strategy optimal %t.2.mlir 2>&1 | FileCheck %s --check-prefixes=R2,CHECK
// RUN: sed 's/@R@/8/' %s > %t.8.mlir
// RUN: overlap-run --remarks-filter=overlap --ranks 8 --entry mar_f32 --strategy uniform:4 %t.8.mlir 2>&1 | FileCheck %s --check-prefixes=R8,CHECK

// MC2: Remark="tiles [1024] (mc2, {{.*}}one tile, no overlap wins
// OPT: Remark="tiles [128, 256, 640] (optimal,
// UNI4: Remark="tiles [256, 256, 256, 256] (uniform:4,
// The sum is f32 on the wire (f32 C): 4 bytes an element priced.
// BF16: Remark="tiles [128, 896] (optimal,
// BF16ACC: Remark="tiles [384, 384, 256] (uniform:3,
// M = 712 is not a multiple of the 128-row alignment: the last tile takes
// the remainder (712 = 256 + 256 + 200), and mc2 keeps one tile of 712.
// UNEVEN: Remark="tiles [256, 256, 200] (uniform:3,
// UNEVEN-MC2: Remark="tiles [712] (mc2,
// UPSTREAM: Remark="tiles [512, 512] (uniform:2,
// R1: Remark="tiles [512, 512] (uniform:2,
// R2: Remark="tiles [128, 256, 640] (optimal,
// R8: Remark="tiles [256, 256, 256, 256] (uniform:4,

// CHECK: overlap-run: @{{[a-z0-9_]+}} on {{[0-9]+}} host rank
// CHECK: result0 {{.*}} max abs err 0 {{.*}} bit-identical
// CHECK: bit-identical: yes
// CHECK-NEXT: OK

shard.grid @tp(shape = @R@)

func.func @mar_f32(%a: tensor<1024x256xf32>, %b: tensor<256x256xf32>, %c: tensor<1024x256xf32>) -> tensor<1024x256xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<1024x256xf32>, tensor<256x256xf32>, tensor<1024x256xf32> -> tensor<1024x256xf32>
  return %r : tensor<1024x256xf32>
}

// bf16 factors, f32 accumulator.
func.func @mar_bf16(%a: tensor<1024x256xbf16>, %b: tensor<256x256xbf16>, %c: tensor<1024x256xf32>) -> tensor<1024x256xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<1024x256xbf16>, tensor<256x256xbf16>, tensor<1024x256xf32> -> tensor<1024x256xf32>
  return %r : tensor<1024x256xf32>
}

// bf16 throughout: the GEMM rounds to bf16 once per element, the
// all-reduce sums in f32 and rounds once, so tiles do not change a bit.
func.func @mar_bf16_acc(%a: tensor<1024x128xbf16>, %b: tensor<128x256xbf16>, %c: tensor<1024x256xbf16>) -> tensor<1024x256xbf16> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<1024x128xbf16>, tensor<128x256xbf16>, tensor<1024x256xbf16> -> tensor<1024x256xbf16>
  return %r : tensor<1024x256xbf16>
}

func.func @mar_uneven(%a: tensor<712x128xf32>, %b: tensor<128x96xf32>, %c: tensor<712x96xf32>) -> tensor<712x96xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<712x128xf32>, tensor<128x96xf32>, tensor<712x96xf32> -> tensor<712x96xf32>
  return %r : tensor<712x96xf32>
}

// Upstream form: overlap-raise fuses the matmul with the shard.all_reduce.
func.func @upstream(%a: tensor<1024x128xf32>, %b: tensor<128x128xf32>) -> tensor<1024x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x128xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x128xf32>) -> tensor<1024x128xf32>
  %p = linalg.matmul ins(%a, %b : tensor<1024x128xf32>, tensor<128x128xf32>) outs(%c : tensor<1024x128xf32>) -> tensor<1024x128xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<1024x128xf32> -> tensor<1024x128xf32>
  return %r : tensor<1024x128xf32>
}

// The accumulator C is also A or B: the tiled program must give the
// reference's result, and leave the arguments as the reference does (the
// tiles work on one copy of C, as the single tile does). Where two correct
// programs do leave a tensor argument differently, overlap-run says which
// wrote into it and does not call it a mismatch
// (Tools/overlap-exec/arguments.test).
//
// RUN: overlap-run --ranks 2 --entry c_is_a --strategy uniform:2 %s | FileCheck %s
// RUN: overlap-run --ranks 2 --entry c_is_b --strategy uniform:2 %s | FileCheck %s
// RUN: overlap-run --ranks 2 --entry rs_c_is_a --strategy uniform:2 %s | FileCheck %s

// CHECK: result0 {{.*}} max abs err 0 {{.*}} bit-identical
// CHECK-NEXT: arg0 {{.*}} bit-identical
// CHECK-NEXT: arg1 {{.*}} bit-identical
// CHECK-NOT: differ
// CHECK: bit-identical: yes
// CHECK-NEXT: OK

shard.grid @tp(shape = 2)

func.func @c_is_a(%a: tensor<256x64xf32>, %b: tensor<64x64xf32>) -> tensor<256x64xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %a on @tp grid_axes = [0]
      : tensor<256x64xf32>, tensor<64x64xf32>, tensor<256x64xf32> -> tensor<256x64xf32>
  return %r : tensor<256x64xf32>
}

func.func @c_is_b(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %b on @tp grid_axes = [0]
      : tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32> -> tensor<256x256xf32>
  return %r : tensor<256x256xf32>
}

func.func @rs_c_is_a(%a: tensor<256x64xf32>, %b: tensor<64x64xf32>) -> tensor<128x64xf32> {
  %r = overlap.matmul_reduce_scatter %a, %b, %a on @tp grid_axes = [0]
      : tensor<256x64xf32>, tensor<64x64xf32>, tensor<256x64xf32> -> tensor<128x64xf32>
  return %r : tensor<128x64xf32>
}

// A grid with a dynamic shape: the Planner cannot plan the fused op, the
// tensor stage leaves it whole, and bufferization refuses it. The error
// says why it was not planned (before, that reason showed only with
// --remarks-filter, and the error read "run overlap-plan and
// overlap-decompose", which the pipeline had done).
//
// RUN: not overlap-compile %s --emit=mlir -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: 'overlap.matmul_all_reduce' op must be decomposed before bufferization, but was not planned: the group size of @dyn is not static (a grid with a dynamic shape); pass ranks=N (overlap-plan) to plan it anyway
// CHECK: overlap-compile: error: stage 'bufferize'

shard.grid @dyn(shape = ?)

func.func @dynamic_group(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>,
                         %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @dyn grid_axes = [0]
      : tensor<256x64xf32>, tensor<64x32xf32>, tensor<256x32xf32>
      -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

// A branch (scf.index_switch, what overlap.jax makes of a JAX cond) whose
// two cases each hold a matmul + all-reduce: each case's tiles are
// scheduled on streams inside it, and the program stays bit-identical to
// the unsplit one under chaos. Its index is read on the host from an
// all-reduced value (the same on every rank): with target=cuda that element
// of device memory is staged through a host slot after the streams finish.
//
// RUN: overlap-compile --strategy uniform:2 --emit mlir --stop-after-stage schedule %s | FileCheck %s --check-prefix=BRANCH
// BRANCH: scf.index_switch
// BRANCH: overlap.concurrent
// BRANCH: default
// BRANCH: overlap.concurrent
// RUN: bash -c 'for s in 1 2; do overlap-run --ranks 4 --strategy uniform:2 --chaos $s %s | tail -1; done' | FileCheck %s --check-prefix=OK
// OK-COUNT-2: {{^}}OK{{$}}
// RUN: overlap-compile --target cuda --strategy uniform:2 --emit mlir --stop-after-stage runtime %s | FileCheck %s --check-prefix=CUDA
// CUDA: call @overlap_all_reduce
// CUDA: call @overlap_context_synchronize
// CUDA: call @overlap_memcpy
// CUDA: llvm.load
// CUDA: scf.index_switch

shard.grid @tp(shape = 4)

// A branch that every rank takes alike: its index is read from an
// all-reduced value, the same on every rank.
func.func @branch(%x: tensor<256x64xf32>, %w: tensor<64x64xf32>) -> tensor<256x64xf32> {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %g = shard.all_reduce %x on @tp grid_axes = [0] : tensor<256x64xf32> -> tensor<256x64xf32>
  %v = tensor.extract %g[%c0, %c0] : tensor<256x64xf32>
  %p = arith.cmpf ogt, %v, %z : f32
  %k = arith.index_cast %p : i1 to index
  %r = scf.index_switch %k -> tensor<256x64xf32>
  case 0 {
    %e = tensor.empty() : tensor<256x64xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x64xf32>) -> tensor<256x64xf32>
    %m = linalg.matmul ins(%x, %w : tensor<256x64xf32>, tensor<64x64xf32>) outs(%f : tensor<256x64xf32>) -> tensor<256x64xf32>
    %s = shard.all_reduce %m on @tp grid_axes = [0] : tensor<256x64xf32> -> tensor<256x64xf32>
    scf.yield %s : tensor<256x64xf32>
  }
  default {
    %e = tensor.empty() : tensor<256x64xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x64xf32>) -> tensor<256x64xf32>
    %m = linalg.matmul ins(%x, %w : tensor<256x64xf32>, tensor<64x64xf32>) outs(%f : tensor<256x64xf32>) -> tensor<256x64xf32>
    %s = shard.all_reduce %m on @tp grid_axes = [0] : tensor<256x64xf32> -> tensor<256x64xf32>
    %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<256x64xf32>) outs(%e : tensor<256x64xf32>) {
    ^bb0(%a: f32, %o: f32):
      %y = math.tanh %a : f32
      linalg.yield %y : f32
    } -> tensor<256x64xf32>
    scf.yield %t : tensor<256x64xf32>
  }
  return %r : tensor<256x64xf32>
}

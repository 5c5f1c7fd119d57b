// Tile work inside loops and branches (what overlap.jax makes of a JAX
// scan, while or cond): the matmul + all-reduce of a loop body is planned,
// split and scheduled on two streams inside the body, each iteration
// enqueues its tiles and joins them, and the signal slots live at the
// function's entry (not one alloca per iteration).
//
// RUN: overlap-compile --strategy uniform:2 --emit mlir --stop-after-stage schedule --entry scan %s | FileCheck %s --check-prefix=SCHED
// SCHED: scf.for
// SCHED: overlap.concurrent
// SCHED: overlap.stream
// SCHED: overlap.signal
// SCHED: scf.yield
//
// RUN: overlap-compile --strategy uniform:2 --emit mlir --stop-after-stage runtime --entry scan %s | FileCheck %s --check-prefix=RT
// RT: func.func @scan(
// RT: llvm.alloca
// RT: scf.for
// RT-NOT: llvm.alloca
// RT: call @overlap_signals_acquire
// RT: call @overlap_gemm
// RT: call @overlap_all_reduce
// RT: scf.yield
//
// RUN: overlap-compile --target cuda --strategy uniform:2 --emit mlir --stop-after-stage runtime --entry scan %s | FileCheck %s --check-prefix=CUDA
// CUDA: scf.for
// CUDA: call @overlap_signals_acquire
// CUDA: call @overlap_signal
// CUDA: call @overlap_wait
// CUDA: scf.yield
//
// Bit-identical to the unsplit program under chaos, for each kind of
// region (scf.index_switch: loops-host-read.mlir); and the check can fail: without the waits, chaos makes the loop
// read tiles before they are reduced.
// RUN: bash -c 'for e in scan loop; do for s in 1 2; do overlap-run --ranks 4 --entry $e --strategy uniform:2 --chaos $s %s | tail -1; done; done' | FileCheck %s --check-prefix=OK
// OK-COUNT-4: {{^}}OK{{$}}
// RUN: bash -c 'for s in 1 2 3 4; do overlap-run --ranks 4 --entry scan --strategy uniform:2 --testing-drop-waits --chaos $s %s; echo "exit $?"; done' | FileCheck %s --check-prefix=DROP --implicit-check-not="exit 2"
// DROP: {{^}}MISMATCH{{$}}

shard.grid @tp(shape = 4)

func.func @scan(%x: tensor<256x64xf32>, %w: tensor<64x64xf32>) -> tensor<256x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%c = %x) -> (tensor<256x64xf32>) {
    %e = tensor.empty() : tensor<256x64xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x64xf32>) -> tensor<256x64xf32>
    %m = linalg.matmul ins(%c, %w : tensor<256x64xf32>, tensor<64x64xf32>) outs(%f : tensor<256x64xf32>) -> tensor<256x64xf32>
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

// A while loop whose condition is read on the host (each rank the same:
// the count of iterations only).
func.func @loop(%x: tensor<256x64xf32>, %w: tensor<64x64xf32>) -> tensor<256x64xf32> {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %r:2 = scf.while (%c = %x, %i = %c0) : (tensor<256x64xf32>, i32) -> (tensor<256x64xf32>, i32) {
    %go = arith.cmpi slt, %i, %c2 : i32
    scf.condition(%go) %c, %i : tensor<256x64xf32>, i32
  } do {
  ^bb0(%c: tensor<256x64xf32>, %i: i32):
    %e = tensor.empty() : tensor<256x64xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x64xf32>) -> tensor<256x64xf32>
    %m = linalg.matmul ins(%c, %w : tensor<256x64xf32>, tensor<64x64xf32>) outs(%f : tensor<256x64xf32>) -> tensor<256x64xf32>
    %s = shard.all_reduce %m on @tp grid_axes = [0] : tensor<256x64xf32> -> tensor<256x64xf32>
    %n = arith.addi %i, %c1 : i32
    scf.yield %s, %n : tensor<256x64xf32>, i32
  }
  return %r#0 : tensor<256x64xf32>
}

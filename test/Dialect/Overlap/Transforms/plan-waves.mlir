// RUN: overlap-opt %s --overlap-plan="profile=h100-nvlink-datasheet strategy=waves" --remarks-filter=overlap 2>&1 | FileCheck %s

// waves (FlashOverlap) groups the output-tile waves of one GEMM kernel; the
// decomposition emits one GEMM call per tile, so the plan the compiler
// attaches and reports is priced as those calls (what overlap-plan
// --strategy waves prints is the one-kernel model: 581.5 us here).

// CHECK: Remark="tiles [896, 1408, 1792] (waves, comm-bound): predicted [[P:[0-9]+]].{{[0-9]}} us vs serial 675.4 us, {{.*}} faster (priced as the per-tile GEMMs the compiler emits; waves' one-kernel model predicts 581.5 us)"
// CHECK: overlap.plan = #overlap.plan<tiles = [896, 1408, 1792], strategy = "waves", bound = comm, predicted_us = [[P]].
shard.grid @tp(shape = 8)
func.func @f(%a: tensor<4096x3072xf16>, %b: tensor<3072x8192xf16>, %c: tensor<4096x8192xf16>) -> tensor<4096x8192xf16> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16> -> tensor<4096x8192xf16>
  return %r : tensor<4096x8192xf16>
}

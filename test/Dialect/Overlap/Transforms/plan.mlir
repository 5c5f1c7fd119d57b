// RUN: overlap-opt %s --overlap-plan="profile=mc2-example strategy=mc2" --remarks-filter=overlap -split-input-file -verify-diagnostics | FileCheck %s
// RUN: overlap-opt %s --overlap-plan="profile=%profiles/mc2-example.json strategy=none" --remarks-filter=overlap -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: overlap-opt %s --overlap-plan="profile=mc2-example strategy=optimal ranks=8" --remarks-filter=overlap -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPTIMAL
// RUN: not overlap-opt %s --overlap-plan="profile=no-such-profile" -split-input-file 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not overlap-opt %s --overlap-plan="profile=%S/Inputs/bad-profile.json" -split-input-file 2>&1 | FileCheck %s --check-prefix=MALFORMED
// RUN: not overlap-opt %s --overlap-plan="profile=mc2-example strategy=uniform:0" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADSTRATEGY
// RUN: not overlap-opt %s --overlap-plan="profile=mc2-example ranks=-1" -split-input-file 2>&1 | FileCheck %s --check-prefix=BADRANKS
// BADRANKS: error: overlap-plan: option ranks is -1; expected 0 (each op's group size from its grid) or a group size >= 1

// NONE: remark: [Analysis] plan | Category:overlap:overlap-plan | Function={{[a-z_0-9]+}} | Remark="tiles [4096] (none, comm-bound): one tile, no overlap wins; predicted 1733.9 us (serial 1733.9 us)
// OPTIMAL: remark: [Analysis] plan | Category:overlap:overlap-plan | Function={{[a-z_0-9]+}} | Remark="tiles [{{.*}}] (optimal, comm-bound): predicted {{.*}} us vs serial 1733.9 us, {{.*}}% faster
// The ranks override plans the op over a dynamic grid too.
// OPTIMAL: remark: {{.*}}Remark="tiles [{{.*}}] (optimal, comm-bound)
// MISSING: error: overlap-plan: profile: no file 'no-such-profile' and no shipped profile of that name (shipped: {{.*}}h100-nvlink-datasheet, h200-measured, {{.*}}, in {{.*}}profiles)
// MALFORMED: error: overlap-plan: {{.*}}bad-profile.json
// BADSTRATEGY: error: overlap-plan: --strategy: uniform:n needs a positive integer n, got '0'

// The MC² seed's worked example: M=4096 K=3072 N=8192 f16 on 8 ranks.
shard.grid @tp(shape = 8)

// CHECK-LABEL: func.func @mc2_example
// CHECK: overlap.matmul_all_reduce
// CHECK-SAME: overlap.plan = #overlap.plan<tiles = [512, 896, 896, 896, 896], strategy = "mc2", bound = comm
func.func @mc2_example(%a: tensor<4096x3072xf16>, %b: tensor<3072x8192xf16>,
                       %c: tensor<4096x8192xf16>) -> tensor<4096x8192xf16> {
  // expected-remark @+1 {{tiles [512, 896, 896, 896, 896] (mc2, comm-bound): predicted}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16>
      -> tensor<4096x8192xf16>
  return %r : tensor<4096x8192xf16>
}

// -----

shard.grid @dyn(shape = ?)

// CHECK-LABEL: func.func @dynamic_group
// CHECK-NOT: overlap.plan
func.func @dynamic_group(%a: tensor<4096x3072xf16>, %b: tensor<3072x8192xf16>,
                         %c: tensor<4096x8192xf16>) -> tensor<4096x8192xf16> {
  // expected-remark @+1 {{not planned: the group size of @dyn is not static; pass ranks=N to plan anyway}}
  %r = overlap.matmul_all_reduce %a, %b, %c on @dyn grid_axes = [0]
      : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16>
      -> tensor<4096x8192xf16>
  return %r : tensor<4096x8192xf16>
}

// -----

shard.grid @tp(shape = 8)

// A dynamic accumulator cannot be tiled, so it is not planned either.
// CHECK-LABEL: func.func @dynamic_c
// CHECK-NOT: overlap.plan
func.func @dynamic_c(%a: tensor<4096x3072xf16>, %b: tensor<3072x8192xf16>,
                     %c: tensor<?x8192xf16>) -> tensor<512x8192xf16> {
  // expected-remark @+1 {{not planned: C is 'tensor<?x8192xf16>'; plans need static shapes}}
  %r = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
      : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<?x8192xf16>
      -> tensor<512x8192xf16>
  return %r : tensor<512x8192xf16>
}

// The README's tensor-parallel MLP (examples/mlp.mlir: all_gather_matmul,
// ReLU, matmul_reduce_scatter on 4 ranks) end to end on the host, against
// the unsplit reference. The ReLU between the two fused ops runs inline on
// the host between stream work.
//
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --strategy uniform:4 %overlap_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefixes=UNI,CHECK
// RUN: overlap-run --remarks-filter=overlap --ranks 4 --strategy auto --seed 3 %overlap_src/examples/mlp.mlir | FileCheck %s
// RUN: not overlap-run --remarks-filter=overlap --ranks 2 %overlap_src/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=RANKS

// UNI: Remark="tiles [256, 256, 256, 256] (uniform:4,
// UNI: Remark="tiles [256, 256, 256, 256] (uniform:4,
// CHECK: overlap-run: @mlp on 4 host ranks
// CHECK-NEXT: result0 256x512xf32 max abs err 0 {{.*}} bit-identical
// CHECK: bit-identical: yes
// CHECK-NEXT: OK

// RANKS: error: --ranks 2 but grid @tp has 4 devices; the number of ranks must equal the grid's size

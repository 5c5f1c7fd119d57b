// Programs partitioned by upstream (sharding-propagation, shard-partition)
// whose collectives have no matmul to overlap, or are not the forms
// overlap-raise fuses: every entry compiles and runs on 4 host ranks,
// bit for bit against its unsplit build, for both targets; the Megatron
// MLP's all_reduce is still raised and split.
//
// RUN: mlir-opt %S/Inputs/upstream-collectives.mlir --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition),canonicalize)' -o %t.mlir
// RUN: for e in col_gather cols_exchange slice_in; do overlap-run --ranks 4 --entry $e --remarks-filter=overlap %t.mlir; done 2>&1 | FileCheck %s
// RUN: overlap-run --ranks 4 --entry mlp --strategy uniform:2 --remarks-filter=overlap %t.mlir 2>&1 | FileCheck %s --check-prefix=MLP
// RUN: for e in col_gather cols_exchange slice_in mlp; do overlap-compile %t.mlir --entry $e --target=host --emit=obj -o %t.$e.o && echo "host $e"; done | FileCheck %s --check-prefix=HOST

// CHECK: Function=col_gather | Reason="lowered as one unsplit all-gather, not overlapped: its result is not the left operand of a linalg.matmul
// CHECK: bit-identical: yes
// CHECK-NEXT: OK
// The gathered input does feed a matmul, but along columns.
// CHECK: Function=cols_exchange | Reason="lowered as one unsplit all-to-all, not overlapped
// CHECK: Function=cols_exchange | Reason="lowered as one unsplit all-gather, not overlapped: the all-gather concatenates axis 1; only rows (axis 0) are handled"
// CHECK: bit-identical: yes
// CHECK-NEXT: OK
// CHECK: Function=slice_in | Reason="lowered as one unsplit all-gather, not overlapped
// CHECK: bit-identical: yes
// CHECK-NEXT: OK
// MLP: Remark="tiles [128, 128] (uniform:2,
// MLP: bit-identical: yes
// MLP-NEXT: OK
// HOST: host col_gather
// HOST: host cols_exchange
// HOST: host slice_in
// HOST: host mlp

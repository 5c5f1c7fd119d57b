// overlap-compile: the whole pipeline in process, to each kind of output.
//
// RUN: overlap-compile --remarks-filter=overlap %s --strategy uniform:2 --emit=mlir | FileCheck %s --check-prefix=MLIR
// RUN: overlap-compile --remarks-filter=overlap %s --strategy uniform:2 --emit=mlir --stop-after-stage=schedule | FileCheck %s --check-prefix=SCHED
// RUN: overlap-compile --remarks-filter=overlap %s --strategy uniform:2 --emit=llvm -o %t.ll
// RUN: FileCheck %s --check-prefix=LLVM < %t.ll
// RUN: overlap-compile --remarks-filter=overlap %s --strategy uniform:2 --emit=obj -o %t.o
// RUN: llvm-nm %t.o | FileCheck %s --check-prefix=OBJ
// RUN: overlap-compile --remarks-filter=overlap %s --strategy uniform:2 --emit=so -o %t.so
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s --check-prefix=SO
// RUN: llvm-readobj --needed-libs %t.so | FileCheck %s --check-prefix=NEEDED
// A C program runs the library on 2 host ranks and checks D exactly.
// RUN: cc -ffp-contract=off -I %overlap_src/include %S/Inputs/c-driver.c -ldl -o %t.driver
// RUN: %t.driver %t.so | FileCheck %s --check-prefix=DRIVER
// RUN: overlap-compile --remarks-filter=overlap %s --strategy uniform:2 --emit=llvm -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: overlap-compile --remarks-filter=overlap --print-pipeline --profile p.json --strategy mc2 | FileCheck %s --check-prefix=PIPELINE
// The stages are built in code; what --print-pipeline prints of them is a
// pipeline of registered passes that gives the same module.
// RUN: overlap-compile --print-pipeline --strategy uniform:2 > %t.pipeline
// RUN: bash -c 'overlap-opt %s --pass-pipeline="$(cat %t.pipeline)" -o %t.printed.mlir'
// RUN: overlap-compile %s --strategy uniform:2 --emit=mlir -o %t.built.mlir
// RUN: diff %t.printed.mlir %t.built.mlir

// MLIR: llvm.func @mar(%arg0: !llvm.ptr
// MLIR: llvm.call @overlap_gemm
// MLIR: llvm.call @overlap_all_reduce
// MLIR: llvm.func @_mlir_ciface_mar(

// SCHED: func.func @mar(
// SCHED: overlap.concurrent
// SCHED: overlap.stream compute
// SCHED: overlap.stream comm

// LLVM-DAG: define protected void @_mlir_ciface_mar(ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, ptr {{.*}})
// LLVM-DAG: declare {{.*}} @overlap_gemm(

// OBJ: T _mlir_ciface_mar
// OBJ: U overlap_all_reduce
// OBJ: U overlap_gemm

// SO: T _mlir_ciface_mar
// NEEDED: liboverlap_runtime.so
// DRIVER: c-driver: OK

// REMARK: Remark="tiles [128, 128] (uniform:2,

// PIPELINE: builtin.module(func.func(overlap-tosa-zero-points,tosa-to-linalg-named{{.*}},convert-elementwise-to-linalg,overlap-check-slice-bounds),overlap-inline-collectives,overlap-expand-collectives,overlap-raise,overlap-reorder-chains{{.*}}profile=p.json},overlap-plan{profile=p.json ranks=0 strategy=mc2},overlap-decompose,{{.*}},one-shot-bufferize{{.*}},overlap-schedule-streams{testing-drop-waits=false},overlap-copy-report{profile=p.json},convert-overlap-to-runtime{target=host},convert-bufferization-to-memref,{{.*}},reconcile-unrealized-casts,overlap-bf16-as-i16)

shard.grid @tp(shape = 2)

func.func @mar(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<256x64xf32>, tensor<64x32xf32>, tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

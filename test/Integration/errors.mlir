// Usage, compile and runtime errors: overlap-run exits 2 (1 is kept for
// MISMATCH), overlap-compile exits 1; every message names what failed.
//
// RUN: bash -c 'overlap-run --ranks 4 %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: overlap-run: error: the module has 3 public functions with a body (@mar, @mar_c32, @mar_dyn); choose one with --entry
// ENTRY: exit 2
//
// RUN: bash -c 'overlap-run --ranks 4 --entry nope %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=NOPE
// NOPE: overlap-run: error: no public function @nope with a body; public functions: @mar, @mar_c32, @mar_dyn
// NOPE: exit 2
//
// RUN: bash -c 'overlap-run --ranks 8 --entry mar %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=RANKS
// RANKS: overlap-run: error: --ranks 8 but grid @tp has 4 devices; the number of ranks must equal the grid's size
// RANKS: exit 2
//
// RUN: bash -c 'overlap-run --ranks 4 --entry mar_c32 %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=I32
// I32: overlap-run: error: arg0 has element type complex<f32>; overlap-run handles f32, f16, bf16, f64 and signless i1, i8, i16, i32, i64
// I32: exit 2
//
// RUN: bash -c 'overlap-run --ranks 4 --entry mar_dyn %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=DYN
// A dynamic size runs with 2 x the ranks (seeded; given inputs set it).
// DYN: result0 8x64xf32 {{.*}} bit-identical
// DYN: arg0 8x64xf32 {{.*}} bit-identical
// DYN: exit 0
//
// Tolerances are finite and not negative: a NaN bound would report a
// bit-identical run as a MISMATCH.
// RUN: bash -c 'overlap-run --ranks 4 --entry mar --rtol nan %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=RTOL-NAN
// RTOL-NAN: overlap-run: error: --rtol 'nan': expected a finite number >= 0
// RTOL-NAN-NEXT: exit 2
// RUN: bash -c 'overlap-run --ranks 4 --entry mar --atol inf %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=ATOL-INF
// ATOL-INF: overlap-run: error: --atol 'inf': expected a finite number >= 0
// ATOL-INF-NEXT: exit 2
// RUN: bash -c 'overlap-run --ranks 4 --entry mar --atol -1e-3 %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=ATOL-NEG
// ATOL-NEG: overlap-run: error: --atol '-1e-3': expected a finite number >= 0
// ATOL-NEG-NEXT: exit 2
//
// An explicit tile count the preferred 128-row blocks cannot hold is
// honoured with smaller blocks, and the plan's remark says so (it was a
// compile error); more tiles than rows gives one-row tiles.
// RUN: bash -c 'overlap-run --ranks 4 --entry mar --strategy uniform:3 --remarks-filter=overlap %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=PLAN
// PLAN: tiles [128, 64, 64] (uniform:3, {{.*}} [uniform:3 needs 3 tiles of 128-row blocks but M = 256 has 2: honoured with 64-row blocks (smaller than the preferred 128)]
// PLAN: OK
// PLAN: exit 0
// RUN: bash -c 'overlap-run --ranks 4 --entry mar --strategy uniform:300 --remarks-filter=overlap %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=PLAN300
// PLAN300: [uniform:300 asks for 300 tiles but M = 256 holds only 256 of 1 rows (the least a tile can be here): 256 tiles]
// PLAN300: exit 0
//
// RUN: bash -c 'overlap-run --ranks 4 --entry mar --profile %S/Inputs/missing.json %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=PROFILE
// PROFILE: overlap-run: error: --profile: no file '{{.*}}missing.json' and no shipped profile of that name
// PROFILE: exit 2
//
// A wait timeout is a runtime error: the runtime's launch error is printed.
// RUN: bash -c 'overlap-run --ranks 4 --entry mar --strategy uniform:2 --chaos 1 --chaos-max-us 200000 --wait-timeout-ms 1 %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=TIMEOUT
// TIMEOUT: overlap-run: error: the overlap run failed: OVERLAP_ERROR_TIMEOUT: overlap_
// TIMEOUT-SAME: not signalled within 1 ms
// TIMEOUT-SAME: a slow step (a large host GEMM) reads the same as a rank that never signals: for a large program raise the timeout (--wait-timeout-ms, wait_timeout_ms, OVERLAP_WAIT_TIMEOUT_MS)
// TIMEOUT: exit 2
//
// Timeouts and chaos delays have limits (a timeout of 9.2e12 ms overflowed
// the deadline and timed out at once; a delay of 2^62 us never ended).
// RUN: bash -c 'overlap-run --ranks 4 --entry mar --wait-timeout-ms 9200000000000 %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=WAITMAX
// WAITMAX: overlap-run: error: --wait-timeout-ms '9200000000000': expected 0 (the runtime's default) to 1000000000 milliseconds
// WAITMAX: exit 2
// RUN: bash -c 'overlap-run --ranks 4 --entry mar --chaos 1 --chaos-max-us 4611686018427387904 %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=CHAOSMAX
// CHAOSMAX: overlap-run: error: --chaos-max-us '4611686018427387904': expected 0 (the runtime's default) to 10000000 microseconds
// CHAOSMAX: exit 2
// RUN: bash -c 'OVERLAP_WAIT_TIMEOUT_MS=9200000000000 overlap-run --ranks 4 --entry mar %s; echo "exit $?"' 2>&1 | FileCheck %s --check-prefix=WAITENV
// WAITENV: overlap-run: error: the overlap run failed: OVERLAP_ERROR_INVALID_ARGUMENT: overlap_host_launch: OVERLAP_WAIT_TIMEOUT_MS must be a positive integer of at most 1000000000 (ms)
// WAITENV: exit 2
//
// overlap-compile: with the CUDA target, an element of device memory the
// host reads is staged (every stream done, one element copied into a host
// slot); it was refused before.
// RUN: overlap-compile %S/Inputs/host-read.mlir --emit=obj -o /dev/null
// RUN: overlap-compile %S/Inputs/host-read.mlir --target=cuda --emit=mlir --stop-after-stage=runtime -o - 2>&1 | FileCheck %s --check-prefix=CUDA
// CUDA: call @overlap_context_synchronize
// CUDA: call @overlap_memcpy
// CUDA: llvm.load %{{.*}} : !llvm.ptr -> f32
//
// RUN: not overlap-compile %s --emit=llvm --stop-after-stage=schedule 2>&1 | FileCheck %s --check-prefix=STOP
// STOP: overlap-compile: error: --stop-after-stage needs --emit=mlir
// RUN: not overlap-compile %s --emit=mlir --stop-after-stage=nope 2>&1 | FileCheck %s --check-prefix=STAGE
// STAGE: overlap-compile: error: --stop-after-stage: unknown stage 'nope' for --target=host (tensor, bufferize, schedule, runtime, llvm)
//
// An unknown CPU is refused before anything is compiled, naming the flag
// (LLVM itself only warns, then aborts in code generation).
// RUN: not overlap-compile %s --entry mar --emit=obj --mcpu=bogus -o %t.o 2>&1 | FileCheck %s --check-prefix=MCPU
// MCPU: overlap-compile: error: --mcpu: 'bogus' is not a CPU of {{.*}} (the closest is '{{.*}}'; 'generic' and 'native' also work)
// MCPU-NOT: LLVM ERROR
// MCPU-NOT: remark

shard.grid @tp(shape = 4)

func.func @mar(%a: tensor<256x64xf32>, %b: tensor<64x32xf32>, %c: tensor<256x32xf32>) -> tensor<256x32xf32> {
  %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
      : tensor<256x64xf32>, tensor<64x32xf32>, tensor<256x32xf32> -> tensor<256x32xf32>
  return %r : tensor<256x32xf32>
}

func.func @mar_c32(%a: tensor<256x64xcomplex<f32>>) -> tensor<256x64xcomplex<f32>> {
  return %a : tensor<256x64xcomplex<f32>>
}

func.func @mar_dyn(%a: tensor<?x64xf32>) -> tensor<?x64xf32> {
  return %a : tensor<?x64xf32>
}
// The kernels stage exists only for target=cuda.
// RUN: not overlap-compile %s --emit=mlir --stop-after-stage=kernels 2>&1 | FileCheck %s --check-prefix=KSTAGE
// KSTAGE: unknown stage 'kernels' for --target=host (tensor, bufferize, schedule, runtime, llvm)
// RUN: not overlap-compile %s --target=cuda --gpu-format=cubin 2>&1 | FileCheck %s --check-prefix=FORMAT
// FORMAT: overlap-compile: error: gpu-format: 'cubin' is not one of fatbin, bin, isa

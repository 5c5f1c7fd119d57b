//===- Passes.td - Overlap conversion passes ---------------*- tablegen -*-===//

#ifndef OVERLAP_CONVERSION_PASSES_TD
#define OVERLAP_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertOverlapToRuntime : Pass<"convert-overlap-to-runtime", "ModuleOp"> {
  let summary = "Lower the scheduled memref program to calls of the Overlap runtime";
  let description = [{
    Runs after `overlap-schedule-streams`. Every public function with a body
    gets a first argument `!llvm.ptr`, the runtime context
    (`overlap_context *`), and `llvm.emit_c_interface`, so C and C++ callers
    (and the host backend's rank threads) call `_mlir_ciface_<name>(ctx,
    ...)`. The program then calls the C ABI of
    `include/overlap/Runtime/overlap_runtime.h`:

    - `linalg.matmul`, and `linalg.batch_matmul` with B broadcast (the
      strided-batched form of decomposed tiles) → `overlap_gemm`;
    - `overlap.all_reduce` / `reduce_scatter` / `all_gather` on contiguous
      memrefs → the collective of the group the op's grid axes form
      (groups are split once at function entry from the rank's grid
      coordinates);
    - `overlap.signals` → `overlap_signals_acquire` (new epoch per call),
      `overlap.signal` / `overlap.wait` → `overlap_signal` / `overlap_wait`;
    - copies between a strided and a packed buffer → `overlap_pack` /
      `overlap_unpack` / `overlap_memcpy`;
    - the end of `overlap.concurrent` → `overlap_context_synchronize`.

    The two streams of a concurrent region are emitted interleaved in an
    order where every wait's signal is enqueued first. An op the runtime
    does not provide (an elementwise `linalg.generic`, a `linalg.fill`)
    stays inline on the host: it first synchronizes its stream, so it sees
    exactly what the stream order promises. Work outside a concurrent
    region is synchronized right after it is enqueued, so the program stays
    sequential there.

    `target=cuda` emits the same runtime calls; inline ops there need the
    GPU kernel path and are rejected for now with an error.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"host\"",
           "Runtime backend the program is for: host or cuda">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // OVERLAP_CONVERSION_PASSES_TD

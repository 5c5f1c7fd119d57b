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
      strided-batched form of decomposed tiles) → `overlap_gemm` (with a
      tile index inside an `overlap.concurrent` region, -1 outside);
    - `overlap.all_reduce` / `reduce_scatter` / `all_gather` on contiguous
      memrefs → the collective of the group the op's grid axes form
      (taken once at function entry: the world when the axes are the whole
      grid in order, else `overlap_group_split_cached` from the rank's grid
      coordinates and a hash of the grid's shape and axes, which splits
      once per context);
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

    `target=cuda` emits the same runtime calls, with three differences:
    every `memref.alloc` / `memref.dealloc` of the function becomes
    `overlap_alloc` / `overlap_free` (device memory); the `gpu.launch_func`
    kernels of `overlap-linalg-to-gpu` are launched on the CUDA stream of
    the stream they were scheduled on (`overlap_cuda_stream`; an async
    dependency that `gpu-to-llvm` turns into the stream argument of
    `mgpuLaunchKernel`), outside a concurrent region on the compute stream,
    followed by a synchronize; and an op that would still run on the host
    and touch memory (a linalg op, `memref.load`/`store`, a copy) is an
    error, because the host cannot read device memory. The function checks
    at entry that its context is a CUDA context.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"host\"",
           "Runtime backend the program is for: host or cuda">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::gpu::GPUDialect"];
}

def OverlapLinalgToGPU : Pass<"overlap-linalg-to-gpu", "::mlir::func::FuncOp"> {
  let summary = "Turn the linalg ops that have no runtime call into GPU kernels";
  let description = [{
    For `target=cuda`, where every buffer is device memory. Runs after
    `overlap-schedule-streams` and before `gpu-kernel-outlining` and
    `convert-overlap-to-runtime{target=cuda}`. Every linalg op on buffers
    that `convert-overlap-to-runtime` does not lower to a runtime call (an
    elementwise `linalg.generic`, `linalg.fill`, `linalg.map`, a transpose,
    a copy that is neither memcpy nor pack/unpack; also a `memref.copy` of
    that kind) becomes a `gpu.launch`: its loops
    (`linalgOpToParallelLoops`) with the outermost `scf.parallel` flattened
    over 1-D blocks of `block-size` threads, one thread per point
    (row-major, innermost index fastest, so accesses coalesce), a guard for
    the last block, any rank and dynamic extents. Reduction dimensions stay
    sequential loops in each thread; an op with no parallel dimension runs
    in one thread. The op keeps its place (inside an `overlap.stream`, its
    stream), so the launch is ordered by the same signal/wait as the op.

    Before:
    ```mlir
    linalg.generic {indexing_maps = [#id, #id],
                    iterator_types = ["parallel", "parallel"]}
        ins(%a : memref<128x300xf32>) outs(%b : memref<128x300xf32>) {
    ^bb0(%x: f32, %y: f32):
      %r = arith.maximumf %x, %zero : f32
      linalg.yield %r : f32
    }
    ```
    After (schematically):
    ```mlir
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %150, ...)
               threads(%tx, %ty, %tz) in (%b = %c256, ...) {
      %lin = %bx * 256 + %tx
      scf.if %lin < 38400 {
        %i = %lin / 300
        %j = %lin % 300
        %x = memref.load %a[%i, %j]
        memref.store (max %x, 0), %b[%i, %j]
      }
      gpu.terminator
    }
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block (1 to 1024)">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def OverlapExpandArith : Pass<"overlap-expand-arith"> {
  let summary = "Expand the arith ops the host's LLVM lowering cannot take, and no others";
  let description = [{
    The host pipeline's stand-in for upstream `arith-expand{include-bf16}`:
    the same bf16 <-> f32 conversion expansion (integer arithmetic, so that
    no program imports the compiler-rt builtin `__truncsfbf2`) and the
    `ceildivsi`/`floordivsi`/`ceildivui` expansions, but not the
    `minimumf`/`maximumf` one. That one is
    `select(cmpf ult(a, b), a, b)` plus a NaN check, which loses the sign of
    zero: `minimumf(-0.0, +0.0)` gave +0.0 (JAX's `lax.min` gives -0.0,
    and `rsqrt` of it is then +inf instead of -inf). Left alone they become
    `llvm.intr.minimum`/`maximum`, which order -0.0 below +0.0.

    ```mlir
    // before
    %m = arith.minimumf %x, %zero : f32
    %t = arith.truncf %m : f32 to bf16
    // after: minimumf unchanged; truncf as integer rounding of the bits
    %m = arith.minimumf %x, %zero : f32
    %b = arith.bitcast %m : f32 to i32
    ...   // round to nearest even, NaN kept quiet
    %t = arith.bitcast %r : i16 to bf16
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def OverlapBF16AsI16 : Pass<"overlap-bf16-as-i16", "ModuleOp"> {
  let summary = "Carry host bf16 values as i16 bit patterns in the LLVM dialect";
  let description = [{
    The host has no bf16 instructions, and by this point no bf16 arithmetic
    is left (it runs in f32 and its conversions are integer code:
    `arith-emulate-unsupported-floats`, `overlap-expand-arith`). What is
    left only moves bits: loads, stores, constants, globals, selects, phis.
    x86's generic-CPU backend still promotes those to f32 where it needs a
    bf16 in a register (a constant to store, a select), and converts back
    with the compiler-rt builtin `__truncsfbf2`, which Debian's libgcc does
    not have: `jnp.where(x > 0, x, 0)` on bf16 did not link at -O1 and
    above. This pass gives every such value, constant, global and element
    type the i16 of the same bits, so LLVM never sees a `bfloat` it could
    promote. An op with real bf16 semantics, were one left, keeps bf16
    behind bitcasts. Kernels in a `gpu.module` are left alone.

    ```mlir
    // before
    %z = llvm.mlir.constant(0.000000e+00 : bf16) : bf16
    %x = llvm.load %p : !llvm.ptr -> bf16
    %s = llvm.select %c, %x, %z : i1, bf16
    // after
    %z = llvm.mlir.constant(0 : i16) : i16
    %x = llvm.load %p : !llvm.ptr -> i16
    %s = llvm.select %c, %x, %z : i1, i16
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def OverlapCheckAllocations : Pass<"overlap-check-allocations",
                                   "ModuleOp"> {
  let summary = "Check every host allocation's size and result at run time";
  let description = [{
    A `memref.alloc` whose sizes come from the program's inputs (a
    `tensor.empty(%n)` with n = 2^40 from `overlap-exec --inputs`) asked
    `malloc` for terabytes, got null and wrote through it (SIGSEGV), or
    with a size whose byte count wraps around 2^64 got a small block and
    wrote past it. Before each host `memref.alloc` with dynamic sizes,
    a `cf.assert` that every size is non-negative and that the byte count
    stays under 2^62; after every host `memref.alloc`, one that the block
    is not null (unless it holds no element). `overlap-assert-to-stderr`
    then makes a failed one fail the rank with the message, which names
    the buffer's type and where the program allocates it. Kernels in a
    `gpu.module` are left alone (device memory is `overlap_alloc`'s,
    which checks its own).

    ```mlir
    // before
    %m = memref.alloc(%n) : memref<?xf32>
    // after
    %ok = ... %n >= 0 and %n * 4 < 2^62
    cf.assert %ok, "cannot allocate memref<?xf32> at f.mlir:3:8: a size from the inputs is negative or the buffer would be larger than 2^62 bytes"
    %m = memref.alloc(%n) : memref<?xf32>
    %p = memref.extract_aligned_pointer_as_index %m : memref<?xf32> -> index
    %nonnull = ... %p != 0 or %n == 0
    cf.assert %nonnull, "cannot allocate memref<?xf32> at f.mlir:3:8: out of memory"
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::memref::MemRefDialect"];
}

def OverlapAssertToStderr : Pass<"overlap-assert-to-stderr", "ModuleOp"> {
  let summary = "Make a failed cf.assert fail the rank with its message";
  let description = [{
    Every host `cf.assert` (the run-time checks the compiler inserts: a
    dynamic size the group size does not divide, a buffer that is not
    contiguous, a failed device allocation) becomes a branch to a block
    that calls the runtime's `overlap_check_failed` with
    `overlap: run-time check failed: <message>`. Inside the loader's
    guarded entry call (`overlap_context_call_guarded`) that fails the
    rank's context with the message and returns to the guard, so the run
    ends with an error the caller sees (an exception in Python, status 1
    from `overlapRunInputs`) and the other ranks' waits fail with it;
    anywhere else it writes the message to file descriptor 2 and aborts.
    (Upstream's `convert-cf-to-llvm` prints the message with `puts`: to
    stdout, buffered when it is a pipe or a file, and lost at its abort.)
    Kernels in a `gpu.module` are left alone.

    ```mlir
    // before
    cf.assert %ok, "overlap_alloc_async: cannot allocate ..."
    // after
    cf.cond_br %ok, ^bb1, ^bb2
  ^bb2:
    %m = llvm.mlir.addressof @overlap_assert_msg_0 : !llvm.ptr
    llvm.call @overlap_check_failed(%m, %len) : (!llvm.ptr, i64) -> ()
    llvm.unreachable
  ^bb1:
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::cf::ControlFlowDialect"];
}

def OverlapExpandShapeViews : Pass<"overlap-expand-shape-views"> {
  let summary = "Write a memref.expand_shape into several dynamic dims as a "
                "reinterpret_cast";
  let description = [{
    MLIR 22's `expand-strided-metadata` crashes on a `memref.expand_shape`
    that splits one dimension into two or more dynamic ones (an
    `all_to_all` over a grid axis of dynamic extent makes one: its
    received rows are split into `[group, rows / group]`). Between
    row-major (identity-layout) memrefs such an expand_shape is a view
    with the output sizes and their row-major strides, which this pass
    writes as a `memref.reinterpret_cast` before that pass runs. Every
    other expand_shape is left to upstream.

    ```mlir
    // before
    %e = memref.expand_shape %m [[0, 1], [2]] output_shape [%g, %s, 2]
        : memref<?x2xf32> into memref<?x?x2xf32>
    // after
    %st = arith.muli %c2, %s : index
    %e = memref.reinterpret_cast %m to offset: [0], sizes: [%g, %s, 2],
        strides: [%st, 2, 1] : memref<?x2xf32> to memref<?x?x2xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // OVERLAP_CONVERSION_PASSES_TD

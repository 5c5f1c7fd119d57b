//===- Passes.td - Overlap dialect passes ------------------*- tablegen -*-===//
//
// The tensor-level passes of Overlap: raise, reorder-chains, plan,
// decompose.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_TRANSFORMS_PASSES_TD
#define OVERLAP_DIALECT_OVERLAP_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def OverlapRaise : Pass<"overlap-raise", "ModuleOp"> {
  let summary = "Fuse linalg.matmul with the shard collective next to it";
  let description = [{
    Recognises a `linalg.matmul` whose result feeds a sum `shard.all_reduce`
    or a sum `shard.reduce_scatter` along rows, or whose left operand is a
    `shard.all_gather` along rows, and replaces the pair by the fused
    `overlap` op. Harmless differences are looked through: `tensor.cast`
    between the two ops, any producer of the accumulator (a `linalg.fill`,
    a constant, or the `scf.if` that `shard-partition` emits to keep the
    init on one rank and zero it on the others; the fused op keeps each
    rank's own C, so its semantics is unchanged).

    Before:
    ```mlir
    %p = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x32xf32>)
                       outs(%c : tensor<64x32xf32>) -> tensor<64x32xf32>
    %r = shard.all_reduce %p on @tp grid_axes = [0]
        : tensor<64x32xf32> -> tensor<64x32xf32>
    ```
    After:
    ```mlir
    %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
        : tensor<64x32xf32>, tensor<32x32xf32>, tensor<64x32xf32>
        -> tensor<64x32xf32>
    ```
    It leaves the IR alone, with a remark that says why, when raising would
    be wrong or is not handled: the unreduced product has other users, the
    reduction is not a sum, the collective works along another axis or
    changes the element type, the matmul has user-defined (transposed or
    broadcast) indexing maps, or a shape is dynamic.
  }];
  let dependentDialects = ["::mlir::overlap::OverlapDialect",
                           "::mlir::tensor::TensorDialect"];
}

def OverlapTosaZeroPoints : Pass<"overlap-tosa-zero-points"> {
  let summary = "Lower a tosa.matmul whose zero points are not constants, "
                "and refuse one whose result type its operands contradict";
  let description = [{
    Upstream's `tosa-to-linalg-named` lowers a `tosa.matmul` only when its
    zero points are constants; upstream's own sharding examples pass them
    as function arguments. This pass writes such a matmul as TOSA defines
    it, `(A - a_zp) x (B - b_zp)`: each operand minus its one-element zero
    point (integers widened to the accumulator's type first, floats in
    their own type: TOSA's float zero points are 0, so the operands stay
    what they were), then `linalg.batch_matmul` into a zero fill. A
    matmul with constant zero points is left to upstream's pass.

    A `tosa.matmul` whose static result shape its operands contradict is
    an error that says so: upstream's `shard-partition` (MLIR 22) splits
    the operands of a sharded `tosa.matmul` and leaves its result type
    unsplit, and no lowering can run that program as written.

    Before:
    ```mlir
    %0 = tosa.matmul %a, %b, %zp, %zp
        : (tensor<2x16x8xf32>, tensor<2x8x32xf32>, tensor<1xf32>,
           tensor<1xf32>) -> tensor<2x16x32xf32>
    ```
    After:
    ```mlir
    %a0 = linalg.generic ... ins(%a, %zp) ... { arith.subf }
    %b0 = linalg.generic ... ins(%b, %zp) ... { arith.subf }
    %f = linalg.fill ins(%cst : f32) outs(%e : tensor<2x16x32xf32>)
    %0 = linalg.batch_matmul ins(%a0, %b0 : ...) outs(%f : ...)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def OverlapCheckSliceBounds : Pass<"overlap-check-slice-bounds"> {
  let summary = "Check dynamic slice offsets and sizes against their "
                "tensor at run time";
  let description = [{
    A `tensor.extract_slice` or `tensor.insert_slice` whose offsets, sizes
    or strides are dynamic (a size read from an entry argument) is checked
    where it runs, before it runs: on every dimension with a dynamic
    value, the offset and the size are not negative, the stride is
    positive and the last element taken lies inside the tensor's extent
    (of the source of an extract_slice, of the destination of an
    insert_slice). A failed check is a `cf.assert` whose message names
    the op, its location, the dimension, the extent and the entry
    argument the value comes from, as the other run-time checks do; without it a
    size past the extent read and wrote past both buffers and a negative
    one crashed. Static slices are the tensor verifiers' business. A
    `tensor.extract` or `tensor.insert` at a dynamic index (outside a linalg
    body, whose indices come from its iteration space) is checked the same
    way, as a slice of one element.

    Before:
    ```mlir
    %d = tensor.extract_slice %x[0, 0] [%n, 4] [1, 1]
        : tensor<8x4xf32> to tensor<?x4xf32>
    ```
    After (in substance):
    ```mlir
    cf.assert %size_ok, "tensor.extract_slice at loc(...): dimension 0 ..."
    %d = tensor.extract_slice %x[0, 0] [%n, 4] [1, 1] ...
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::tensor::TensorDialect"];
}

def OverlapInlineCollectives : Pass<"overlap-inline-collectives",
                                    "ModuleOp"> {
  let summary = "Inline every call of a function that holds shard ops";
  let description = [{
    Runs first in `overlap-pipeline`. The runtime lowering gives the
    run-time context (the rank, the groups, the streams) to the entry
    points only, so a collective, `shard.process_linear_index` or any
    other shard op in a function the entry calls would be left unlowered
    (it failed at translation: "missing LLVMTranslationDialectInterface
    ... shard.grid"). Each call of a function whose body holds a shard op
    (after its own such calls are inlined, bottom-up) is inlined; other
    calls are kept, and a callee nothing calls any more is erased. A call
    that cannot be inlined (recursion) is an error that names the callee.

    Before:
    ```mlir
    func.func private @sum(%x: tensor<4xf32>) -> tensor<4xf32> {
      %r = shard.all_reduce %x on @g grid_axes = [0]
          : tensor<4xf32> -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %r = func.call @sum(%x) : (tensor<4xf32>) -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
    ```
    After:
    ```mlir
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %r = shard.all_reduce %x on @g grid_axes = [0]
          : tensor<4xf32> -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
    ```
  }];
}

def OverlapExpandCollectives : Pass<"overlap-expand-collectives",
                                    "ModuleOp"> {
  let summary = "Write the shard ops without a runtime call of their own "
                "with the collectives the runtime has";
  let description = [{
    Runs first in `overlap-pipeline`, so that `overlap-raise` sees what
    the ops became (a `shard.reduce` of a matmul's product is fused like
    the all-reduce it is written as).

    - `shard.reduce`: `shard.all_reduce` (the root's result on every rank;
      the others' is undefined, so any value is right).
    - `shard.gather`: `shard.all_gather` along `gather_axis`, likewise.
    - `shard.broadcast`: every rank's input stacked by one all-gather
      (`[group, ...]`), and the root's block kept.
    - `shard.scatter`: the broadcast, then `shard.all_slice` along
      `scatter_axis`.
    - `shard.shift`: along `shift_axis` the rank at `i` takes the input of
      the rank at `i - offset` (modulo the axis with `rotate`; without it a
      rank with no such source keeps its own input): a stack along that
      axis and one block.
    - `shard.update_halo`: per split dimension, the boundary rows stacked
      and the neighbours' taken.

    - `shard.send` / `shard.recv`: in each function the k-th send and the
      k-th recv on one grid's axes, of one tensor type, pair up when the
      send dominates the recv (MPI's non-overtaking order between two
      ranks). The send stacks every group rank's input and destination
      (two all-gathers); the recv checks at run time that its source sent
      to it (with no source: that exactly one rank did) and takes that
      block. A send nothing receives is a buffered send nobody reads: its
      result is its input (a missed remark says so). A recv with no send
      to pair is left, and `overlap-check-collectives` says why.

    The stacks move the group size times the data of a rooted or
    neighbour exchange: the price of needing no rooted or point-to-point
    runtime call. An op with a dynamic shape or grid is left alone, and
    `overlap-check-collectives` refuses it with the reason.

    Before:
    ```mlir
    %r = shard.broadcast %x on @tp grid_axes = [0] root = [1]
        : (tensor<4x8xf32>) -> tensor<4x8xf32>
    ```
    After (`@tp` of 2 ranks):
    ```mlir
    %s = shard.all_gather %x1 on @tp grid_axes = [0] gather_axis = 0
        : tensor<1x4x8xf32> -> tensor<2x4x8xf32>
    %r = tensor.extract_slice %s[1, 0, 0] [1, 4, 8] [1, 1, 1]
        : tensor<2x4x8xf32> to tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::scf::SCFDialect"];
}

def OverlapLowerCollectives : Pass<"overlap-lower-collectives", "ModuleOp"> {
  let summary = "Lower the shard collectives overlap-raise left alone to "
                "unsplit Overlap collectives";
  let description = [{
    Runs in `overlap-pipeline` after `overlap-decompose`. Every `shard`
    collective on tensors that `overlap-raise` did not fuse with a matmul
    (no matmul beside it, a reduction other than a sum, a form the fused
    ops do not express) still has to run: it becomes one unsplit Overlap
    tile collective over the whole tensor, which bufferization and
    `convert-overlap-to-runtime` turn into one runtime call (host ranks or
    NCCL). A missed remark says that it was not overlapped, and why.

    - `shard.all_reduce` -> `overlap.all_reduce` (sum, max, min, product,
      average); an element type change is a conversion before the
      reduction, so the reduction runs in the result type.
    - `shard.all_gather` / `shard.reduce_scatter` along any axis: along
      axis 0 directly; along axis d the operand is transposed so that d
      leads, the collective works on rows, and the result is transposed
      back.
    - `shard.all_to_all` with any split and concat axes: the split axis is
      moved to the front, the row blocks are exchanged, and the G received
      blocks are laid side by side along the concat axis (one transpose
      and one `tensor.collapse_shape`).
    - `shard.all_slice`: the local slice of the group rank (upstream's
      pattern; no communication).

    Element types are those the runtime's collectives take (f32, f16,
    bf16, f64, i8, i16, i32, i64); the group size is static. Dynamic
    sizes are read from the input at run time (`tensor.dim`), and a
    dynamic dimension cut into one block per rank is checked to divide by
    the group size there (`cf.assert`). A collective outside that is left
    for `overlap-check-collectives`, which says why.

    Before:
    ```mlir
    %g = shard.all_gather %x on @tp grid_axes = [0] gather_axis = 1
        : tensor<8x16xf32> -> tensor<8x64xf32>
    ```
    After (`@tp` of 4 ranks):
    ```mlir
    %t = linalg.transpose ins(%x : tensor<8x16xf32>)
        outs(%e : tensor<16x8xf32>) permutation = [1, 0]
    %a = overlap.all_gather %t on @tp grid_axes = [0]
        : tensor<16x8xf32> -> tensor<64x8xf32>
    %g = linalg.transpose ins(%a : tensor<64x8xf32>)
        outs(%f : tensor<8x64xf32>) permutation = [1, 0]
    // remark: [Missed] not-overlapped | Reason="lowered as one unsplit
    //   all-gather, not overlapped: its result is not the left operand of a
    //   linalg.matmul ..."
    ```
  }];
  let dependentDialects = ["::mlir::overlap::OverlapDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::cf::ControlFlowDialect"];
}

def OverlapOutlineLoops : Pass<"overlap-outline-loops", "ModuleOp"> {
  let summary = "Move each linalg op left on buffers into a shared, "
                "never-inlined function";
  let description = [{
    Runs in the compiler's host `llvm` stage, before
    `convert-linalg-to-loops`. Every linalg op on buffers that would
    become a loop nest in place (the fills, copies and elementwise
    generics of every layer) becomes a call of a private function that
    holds the op alone (`no_inline`); ops that differ only in their
    buffers share one function (constants the op reads, a fill's value
    among them, are cloned in, so that LLVM sees a zero fill as a memset;
    other values it reads are arguments). A model of N identical layers
    then has N calls and one loop nest per kind of op, and every function
    LLVM optimizes is the size of one op, so compile time and code size
    grow linearly in the layers (LLVM's InstCombine and SLP vectorizer
    cost more than linearly in the size of one function).

    Before:
    ```mlir
    func.func @model(%a: memref<64x32xf32>, %b: memref<64x32xf32>) {
      %z = arith.constant 0.0 : f32
      linalg.fill ins(%z : f32) outs(%a : memref<64x32xf32>)
      linalg.fill ins(%z : f32) outs(%b : memref<64x32xf32>)
      return
    }
    ```
    After:
    ```mlir
    func.func @model(%a: memref<64x32xf32>, %b: memref<64x32xf32>) {
      %z = arith.constant 0.0 : f32
      call @__overlap_loops_0(%a) : (memref<64x32xf32>) -> ()
      call @__overlap_loops_0(%b) : (memref<64x32xf32>) -> ()
      return
    }
    func.func private @__overlap_loops_0(%m: memref<64x32xf32>)
        attributes {no_inline} {
      %z = arith.constant 0.0 : f32
      linalg.fill ins(%z : f32) outs(%m : memref<64x32xf32>)
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def OverlapShareGpuKernels : Pass<"overlap-share-gpu-kernels", "ModuleOp"> {
  let summary = "Keep one gpu.module of each kind and launch it for all";
  let description = [{
    Runs in the compiler's cuda `kernels` stage, after
    `gpu-kernel-outlining` and `nvvm-attach-target`. Outlining makes one
    `gpu.module` per launch, so a model of N identical layers has N copies
    of each kernel and `gpu-module-to-binary` compiles every one (80 % of
    the compile time of 48 layers). Modules that are the same but for their
    name are kept once; the `gpu.launch_func` ops of the others launch the
    kept one.

    Before:
    ```mlir
    gpu.module @model_kernel [#nvvm.target<chip = "sm_90a">] {
      gpu.func @model_kernel(%m: memref<64xf32>) kernel { ... }
    }
    gpu.module @model_kernel_0 [#nvvm.target<chip = "sm_90a">] {
      gpu.func @model_kernel(%m: memref<64xf32>) kernel { ... }
    }
    gpu.launch_func @model_kernel::@model_kernel ... args(%a : memref<64xf32>)
    gpu.launch_func @model_kernel_0::@model_kernel ... args(%b : memref<64xf32>)
    ```
    After:
    ```mlir
    gpu.module @model_kernel [#nvvm.target<chip = "sm_90a">] {
      gpu.func @model_kernel(%m: memref<64xf32>) kernel { ... }
    }
    gpu.launch_func @model_kernel::@model_kernel ... args(%a : memref<64xf32>)
    gpu.launch_func @model_kernel::@model_kernel ... args(%b : memref<64xf32>)
    ```
  }];
}

def OverlapFoldElementwiseChains : Pass<"overlap-fold-elementwise-chains"> {
  let summary = "Fuse chains of in-place elementwise linalg.generic ops "
                "before bufferization";
  let description = [{
    Runs first in the compiler's bufferize stage. An elementwise
    `linalg.generic` (parallel loops, one result, a permutation as the
    init's map, a body that does not read the init) whose init is also one
    of its inputs, the form `convert-elementwise-to-linalg` gives arith and
    math on tensors, is fused with the elementwise generics that produce
    its inputs for it alone (upstream's `fuseElementwiseOps`), taking the
    producer's init when its own init was the producer's result; fused
    bodies stop growing at 64 ops. One-shot bufferization compares every
    read with every write of an operand's alias set for each in-place
    decision, so a chain of n such ops (one alias set) cost n^3: 1,000 ops
    over a minute, now well under a second. The values are the same (each
    element goes through the same scalar ops in the same order) and the
    destination is the buffer the in-place chain wrote. Generics that write
    a `tensor.empty` (the JAX importer's) are left as they are.

    Before:
    ```mlir
    %0 = linalg.generic {...} ins(%x, %y : ...) outs(%x : ...) { addf }
    %1 = linalg.generic {...} ins(%0, %y : ...) outs(%0 : ...) { mulf }
    ```
    After:
    ```mlir
    %1 = linalg.generic {...} ins(%x, %y, %y : ...) outs(%x : ...) {
      addf; mulf
    }
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def OverlapLowerDeallocations : Pass<"overlap-lower-deallocations"> {
  let summary = "Lower bufferization.dealloc to scalar alias checks and "
                "memref.dealloc";
  let description = [{
    Runs in the compiler's bufferize stage, after
    `buffer-deallocation-simplification`, in place of what upstream's
    `bufferization-lower-deallocations` does for the deallocations whose
    ownership is known only at run time (the `scf.if` that
    `shard-partition` puts around an accumulator). Upstream lowers those
    through a helper function that stores the buffers' base pointers in
    host `memref<?xindex>` arrays and loads them back, which a device
    target cannot place: with `target=cuda` every buffer is device memory.
    This pass compares the base pointers as `index` values instead: each
    buffer is freed when its condition holds, no retained value shares its
    base, and no earlier freed buffer of the list does; each retained
    value's updated condition is the disjunction of the conditions of the
    buffers that share its base. The semantics are `bufferization.dealloc`'s.
    Unranked memrefs are left for `bufferization-lower-deallocations`.

    Before:
    ```mlir
    %o = bufferization.dealloc (%a : memref<4xf32>) if (%c) retain (%r : memref<4xf32>)
    ```
    After:
    ```mlir
    %ba, %oa, %sa, %ta = memref.extract_strided_metadata %a : ...
    %pa = memref.extract_aligned_pointer_as_index %ba : memref<f32> -> index
    %br, %or, %sr, %tr = memref.extract_strided_metadata %r : ...
    %pr = memref.extract_aligned_pointer_as_index %br : memref<f32> -> index
    %same = arith.cmpi eq, %pa, %pr : index
    %o = arith.andi %c, %same : i1
    %other = arith.cmpi ne, %pa, %pr : index
    %free = arith.andi %c, %other : i1
    scf.if %free {
      memref.dealloc %ba : memref<f32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def OverlapCheckCollectives : Pass<"overlap-check-collectives", "ModuleOp"> {
  let summary = "Refuse the shard ops that Overlap cannot lower";
  let description = [{
    Runs last in `overlap-pipeline`, before bufferization. Collectives that
    `overlap-raise` fused and those that `overlap-lower-collectives`
    lowered are gone by then; any other shard op on tensors (a sharding
    annotation, a collective with an element type, reduction or dynamic
    shape the runtime does not take, an op `shard-partition` does not emit)
    would stop bufferization with "op was not bufferized". This pass makes
    that an error on the op that says why.

    ```mlir
    // error: 'shard.all_reduce' op is not lowered by Overlap: its element
    // type i32 is not one the runtime's collectives take (f32, f16, bf16)
    %r = shard.all_reduce %x on @tp grid_axes = [0] : tensor<4xi32> -> tensor<4xi32>
    ```
  }];
}

def OverlapPlan : Pass<"overlap-plan", "ModuleOp"> {
  let summary = "Choose the M-tiles of every fused op with the Planner";
  let description = [{
    Asks the Planner (with a hardware profile and a strategy) how to split
    each fused op along M, attaches the decision as `overlap.plan`, and
    emits a remark with the prediction. The group size comes from the op's
    grid and axes unless `ranks` overrides it. When one tile is best (no
    overlap wins) the plan has one tile and the remark says so.

    Before:
    ```mlir
    %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0] : ...
    ```
    After (`profile=mc2-example strategy=mc2`):
    ```mlir
    // remark: tiles [512, 896, 896, 896, 896] (mc2, comm-bound): predicted
    //         1387.4 us vs serial 1733.9 us, 20.0% faster
    %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
        {overlap.plan = #overlap.plan<tiles = [512, 896, 896, 896, 896], ...>}
    ```
    A missing or malformed profile fails the pass with the Planner's
    message.
  }];
  let options = [
    Option<"profile", "profile", "std::string",
           /*default=*/"::overlap::planner::kDefaultProfile",
           "Hardware profile: a JSON file path, or the name of one in the "
           "installed profiles/ directory">,
    Option<"strategy", "strategy", "std::string",
           /*default=*/"::overlap::planner::kDefaultStrategy",
           "Tiling strategy, as overlap-compile's --strategy (the list: "
           "OVERLAP_STRATEGY_LIST, overlap/Planner/Defaults.h)">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"0",
           "Group size to plan for; 0 takes it from the op's grid and axes">
  ];
  let dependentDialects = ["::mlir::overlap::OverlapDialect"];
}

def OverlapDecompose : Pass<"overlap-decompose", "ModuleOp"> {
  let summary = "Split each planned fused op into per-tile matmuls and collectives";
  let description = [{
    Applies `overlap.plan`: each tile of M becomes its own matmul and its
    own tile-level collective, still on tensors. Ops without a plan, or
    with shapes or a group size that are not static, are left alone (a
    remark says why).

    The tiles of one fused op are the slices of one `overlap.tiles`: each
    tile's ops work on its slice (a block argument) and yield its new
    contents. A chain of `tensor.insert_slice` through one growing tensor
    would say the same, but one-shot bufferization's aliasing analysis of
    such a chain grows with the cube of the number of tiles (255 tiles took
    ten minutes); with the slices it analyses each tile on its own.

    All-reduce: tile i is rows `off_i .. off_i + m_i` of A and C; a
    `linalg.matmul` into the tile's slice of C and an `overlap.all_reduce`
    of it.

    Reduce-scatter and all-gather: tile i takes `m_i / G` rows at offset
    `off_i / G` of every rank's block, so each tile is one collective call.
    The rows are addressed through a `G x (rows/G) x cols` view
    (`tensor.expand_shape`), and the matmul is a `linalg.batch_matmul`
    whose B is broadcast over the G blocks (a strided-batched GEMM):
    reduce-scatter computes into a packed `(G * m_i/G) x N` buffer that the
    collective reads and scatters `into` the tile's slice of the result;
    all-gather's collective writes a packed buffer that the batched matmul
    reads, and the product lands in place in the tile's slice of C's view.

    Rank-major plans (`layout = "rank-major"`, reduce-scatter and
    all-gather; planner::RankMajorLayout is the rule): a tile is one chunk
    of one rank's block, one contiguous `linalg.matmul` and one
    `overlap.shift`. Reduce-scatter, on step s: the partial of block
    (r + s) mod G (A's rows, plus C's) is shifted by s into slot s of a
    G x (M/G) x N staging buffer (one `overlap.tiles`); step 0's own
    partial is written into slot 0; the result is the G slots summed in
    the order of the ranks that computed them, in f32, rounded once (what
    the runtime's reduce-scatter computes, so host runs are
    bit-identical). All-gather, on step s: the local chunk is shifted by
    -s (receiving block (r + s) mod G's) and multiplied into C's rows of
    that block, slices of one `overlap.tiles` whose offsets are index
    values.

    Sequence parallelism on `[b, s, k]` with b > 1, which overlap-raise
    writes as transposes to `[s, b, k]` rows: when every tile takes whole
    groups of b rows, the tiles are computed b-major from the untransposed
    A into the untransposed result (one strided-batched GEMM over the ranks
    per b; an all-gather packs each tile's local rows, a reduce-scatter's
    received rows are unpacked into their strided place), and the
    transposes go. A fill accumulator becomes each tile's own fill (which
    overlap-fold-into-gemms turns into overwriting GEMMs).

    Before (all-reduce, tiles [128, 128]):
    ```mlir
    %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
        {overlap.plan = #overlap.plan<tiles = [128, 128], ...>} : ...
    ```
    After:
    ```mlir
    %r = overlap.tiles %c : tensor<256x32xf32>
        (%c0 = [0, 0] [128, 32], %c1 = [128, 0] [128, 32]) {
      %a0 = tensor.extract_slice %a[0, 0] [128, 64] [1, 1]
      %p0 = linalg.matmul ins(%a0, %b : ...) outs(%c0 : ...)
      %r0 = overlap.all_reduce %p0 on @tp grid_axes = [0] : ...
      ... (tile 1: rows 128.. of A, into %c1)
      overlap.yield %r0, %r1 : tensor<128x32xf32>, tensor<128x32xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::overlap::OverlapDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def OverlapFoldIntoGemms : Pass<"overlap-fold-into-gemms", "ModuleOp"> {
  let summary = "Read GEMM operands as they lie: no transposed, concatenated, "
                "zero-filled or rounding copy around a contraction";
  let description = [{
    Frontends write weights `[out, in]`, merge projections by concatenating
    their weights, sum into a zero-filled f32 accumulator and round the
    result to bf16 in a pass of its own. Each of those is a pass over
    memory per call outside the GEMM (1016 MiB per call for the Llama-70B
    FFN of `examples/llama-mlp.mlir`). This pass makes each part of an
    `overlap.gemm` instead (one `overlap_gemm` call with its flags):

    - an operand that is a `linalg.transpose` of its last two dimensions:
      `transpose_a` / `transpose_b` (cuBLASLt's TRANSA/TRANSB; the host
      kernel reads with swapped strides);
    - a 2-D B that is a chain of `tensor.insert_slice` into a
      `tensor.empty` covering N exactly (gate and up merged): one GEMM per
      piece, each into its columns of the result;
    - an accumulator that is a `linalg.fill` of +0.0 (through reshapes and
      slices): the GEMM overwrites (no `accumulate`: beta = 0);
    - an overwriting f32 GEMM of f16/bf16 operands whose one use is an
      elementwise `arith.truncf` to that type (through one reshape): the
      GEMM writes the f16/bf16 result, rounded once in its epilogue.

    Each keeps the f32 sum's order (the accumulator or +0.0, then k = 0,
    1, ...) and rounds once, so results are bit-identical to what it
    replaces. `linalg.matmul` / `linalg.batch_matmul` (default maps, or B
    broadcast over the batch) on static tensors of f16, bf16 or f32 become
    `overlap.gemm` only when one of these applies. Runs after
    overlap-decompose, so tiles fold the same way. A remark names each fold.

    Before:
    ```mlir
    %wt = linalg.transpose ins(%w : tensor<32x64xbf16>) outs(%e0 : tensor<64x32xbf16>) permutation = [1, 0]
    %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128x32xf32>) -> tensor<128x32xf32>
    %p = linalg.matmul ins(%x, %wt : tensor<128x64xbf16>, tensor<64x32xbf16>) outs(%z : tensor<128x32xf32>) -> tensor<128x32xf32>
    %r = linalg.generic {...} ins(%p : tensor<128x32xf32>) outs(%e2 : tensor<128x32xbf16>) { arith.truncf ... }
    ```
    After:
    ```mlir
    %r = overlap.gemm %x, %w into %e2 {transpose_b} : tensor<128x64xbf16>, tensor<32x64xbf16>, tensor<128x32xbf16> -> tensor<128x32xbf16>
    ```
  }];
  let dependentDialects = ["::mlir::overlap::OverlapDialect",
                           "::mlir::tensor::TensorDialect"];
}

def OverlapReorderChains : Pass<"overlap-reorder-chains", "ModuleOp"> {
  let summary = "Reorder matrix chains by OP_Count and record fusion decisions";
  let description = [{
    Finds chains of products -- trees of `linalg.matmul` whose intermediate
    results have one use and whose accumulators are zero, with static
    shapes and one element type, and `overlap.chain_matmul` ops -- and
    rebuilds each in the order that needs the fewest scalar multiplications
    (the OP_Count dynamic program). Each rebuilt `linalg.matmul` records the
    TEE-ACM2 fusion decision for a fast memory of `fast-memory` elements as
    `overlap.fusion`. A remark gives the multiplication counts before and
    after. Reassociating changes floating-point rounding.

    Before:
    ```mlir
    %ab  = linalg.matmul ins(%a, %b : tensor<10x100xf32>, tensor<100x5xf32>) outs(%z0 : ...)
    %abc = linalg.matmul ins(%ab, %c : tensor<10x5xf32>, tensor<5x50xf32>) outs(%z1 : ...)
    ```
    (already the best order: 7500 multiplications; `a (b c)` needs 75000.)
    An `overlap.chain_matmul %a, %b, %c` becomes the same two matmuls.

    With `move-collectives` (off by default: it changes rounding), a sum
    all-reduce (`shard.all_reduce`, or the collective of an
    `overlap.matmul_all_reduce`) whose only use is the left operand of a
    product with a right factor that shrinks the tensor is moved after the
    product, allreduce(X)·W = allreduce(X·W), when the profile predicts
    fewer bytes on the wire and a shorter critical path; the product then
    becomes an `overlap.matmul_all_reduce`. The right factor must be the
    same on every rank (replicated): the pass cannot prove it for function
    arguments, which is one more reason the option is opt-in.
  }];
  let options = [
    Option<"fastMemory", "fast-memory", "double",
           /*default=*/"::overlap::planner::kDefaultFastMemory",
           "Fast-memory size in elements for the fusion model (TEE-ACM2's "
           "M)">,
    Option<"moveCollectives", "move-collectives", "bool", /*default=*/"false",
           "Move sum all-reduces past shrinking products with a replicated "
           "right factor (changes rounding)">,
    Option<"profile", "profile", "std::string",
           /*default=*/"::overlap::planner::kDefaultProfile",
           "Profile that prices the collectives for move-collectives">
  ];
  let dependentDialects = ["::mlir::overlap::OverlapDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def OverlapCopyReport : Pass<"overlap-copy-report", "ModuleOp"> {
  let summary = "Report every copy-like op outside GEMMs and collectives "
                "with the bytes it writes per call";
  let description = [{
    Runs on memrefs (the `schedule` stage ends with it). Each op that only
    moves or fills memory -- `memref.copy`, `linalg.copy`,
    `linalg.transpose`, `linalg.broadcast`, `linalg.fill`,
    `bufferization.clone`, and an elementwise `linalg.generic` that only
    copies or converts its one input (a rounding pass) -- gets an analysis
    remark `copy` with the bytes it writes per call (times the static trip
    counts of the `scf.for` loops around it) and where it runs (the compute
    or comm stream, or outside the streams); each function a remark
    `copy-report` with their sum, the bytes they move (read plus written)
    and that traffic priced at the profile's memory bandwidth
    (`written_bytes`, `moved_bytes`, `copy_us`). A copy-like op of
    run-time size is listed without bytes. Remarks only: the IR is not
    changed, and with no remark engine the pass does nothing.

    ```
    overlap-compile examples/llama-mlp.mlir --emit=mlir --stop-after-stage=schedule \
      --remarks-filter=overlap-copy-report -o /dev/null
    remark: [Analysis] copy-report | ... | Remark="0 copy-like ops outside GEMMs and
      collectives write 0 bytes (0.0 MiB) per call and move 0 bytes: 0.0 us at
      3350 GB/s (h100-nvlink-datasheet)"
    ```
    (1016 MiB per call before overlap-fold-into-gemms.)
  }];
  let options = [
    Option<"profile", "profile", "std::string",
           /*default=*/"::overlap::planner::kDefaultProfile",
           "Hardware profile whose memory bandwidth prices the copies: a "
           "JSON file path, or the name of one in the installed profiles/ "
           "directory">,
  ];
}

def OverlapScheduleStreams : Pass<"overlap-schedule-streams", "ModuleOp"> {
  let summary = "Put tile matmuls and collectives on two streams joined by signal/wait";
  let description = [{
    Runs after bufferization. In each block, every maximal run of tile
    work (linalg ops and copies on memrefs, memref tile collectives, and
    the views and allocations between them) that contains a collective
    becomes an `overlap.concurrent` with a `compute` stream (linalg ops,
    copies of compute results) and a `comm` stream (collectives, copies of
    their results). Views and allocations move in front of it.

    For every op, the latest op of the other stream that touches
    overlapping memory (one of them writing) must finish first: the pass
    raises a flag after that op and waits for it before this one, unless
    this stream already waits for that op or a later one of that stream.
    So every cross-stream dependence gets exactly one signal/wait and no
    redundant wait is inserted. Memory overlap is decided per root buffer
    (an allocation or a function argument; distinct arguments are assumed
    not to alias) by the element intervals of static strided layouts;
    an unknown layout overlaps everything of its root.

    Before:
    ```mlir
    linalg.matmul ins(%a0, %b : ...) outs(%c0 : memref<128x32xf32, ...>)
    overlap.all_reduce %c0 on @tp grid_axes = [0] : memref<128x32xf32, ...>
    linalg.matmul ins(%a1, %b : ...) outs(%c1 : memref<128x32xf32, ...>)
    overlap.all_reduce %c1 on @tp grid_axes = [0] : memref<128x32xf32, ...>
    ```
    After:
    ```mlir
    %sig = overlap.signals : !overlap.signals<2>
    overlap.concurrent {
      overlap.stream compute {
        linalg.matmul ins(%a0, %b : ...) outs(%c0 : ...)
        overlap.signal %sig[0] : !overlap.signals<2>
        linalg.matmul ins(%a1, %b : ...) outs(%c1 : ...)
        overlap.signal %sig[1] : !overlap.signals<2>
      }
      overlap.stream comm {
        overlap.wait %sig[0] : !overlap.signals<2>
        overlap.all_reduce %c0 on @tp grid_axes = [0] : ...
        overlap.wait %sig[1] : !overlap.signals<2>
        overlap.all_reduce %c1 on @tp grid_axes = [0] : ...
      }
    }
    ```
  }];
  let options = [
    Option<"testingDropWaits", "testing-drop-waits", "bool",
           /*default=*/"false",
           "Testing only: emit no waits (signals stay), so that the host "
           "backend's chaos mode can show that a missing wait is caught">
  ];
  let dependentDialects = ["::mlir::overlap::OverlapDialect"];
}

#endif // OVERLAP_DIALECT_OVERLAP_TRANSFORMS_PASSES_TD

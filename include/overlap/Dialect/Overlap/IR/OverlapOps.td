//===- OverlapOps.td - Overlap dialect operations ----------*- tablegen -*-===//
//
// Fused tensor-level ops, tile-level collectives (tensor and memref forms)
// and the stream-scheduling ops.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_IR_OVERLAPOPS_TD
#define OVERLAP_DIALECT_OVERLAP_IR_OVERLAPOPS_TD

include "overlap/Dialect/Overlap/IR/OverlapBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Every op that runs over a process group names a `shard.grid` and the
// grid axes that form the group.
defvar GroupArgs = (ins
  FlatSymbolRefAttr:$grid,
  DenseI16ArrayAttr:$grid_axes
);

defvar MatmulElementType = AnyTypeOf<[F16, BF16, F32]>;
defvar Matrix = RankedTensorOf<[F16, BF16, F32]>;

//===----------------------------------------------------------------------===//
// Fused tensor-level ops
//===----------------------------------------------------------------------===//

class Overlap_FusedMatmulOp<string mnemonic, list<Trait> traits = []>
    : Overlap_Op<mnemonic, !listconcat(traits, [
        Pure,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  let arguments = !con((ins Matrix:$a, Matrix:$b, Matrix:$c), GroupArgs);
  let results = (outs Matrix:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $c `on` $grid `grid_axes` `=` $grid_axes attr-dict
    `:` type($a) `,` type($b) `,` type($c) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Rows of the full product that a plan partitions.
    int64_t getPlannedRows();
  }];
}

def Overlap_MatmulAllReduceOp : Overlap_FusedMatmulOp<"matmul_all_reduce"> {
  let summary = "matmul whose result is summed over a process group";
  let description = [{
    Computes `all_reduce_sum(C + A·B)` over the group formed by `grid_axes`
    of `grid`: each rank contributes its own partial product (a row-parallel
    layer of tensor parallelism) and every rank receives the sum. A is MxK,
    B is KxN, C and the result are MxN. A and B share an element type (f16,
    bf16 or f32); C's element type is the accumulator type, either that of
    A and B or f32. With an f32 C the result may be f16 or bf16: each
    element of `C + A·B` is rounded to it once, before the sum over the
    group, which then runs (and moves bytes) in the result type (the cast a
    frontend writes before its `psum`).

    ```mlir
    shard.grid @tp(shape = 8)
    %r = overlap.matmul_all_reduce %a, %b, %c on @tp grid_axes = [0]
        : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16>
        -> tensor<4096x8192xf16>
    ```
  }];
}

def Overlap_MatmulReduceScatterOp
    : Overlap_FusedMatmulOp<"matmul_reduce_scatter"> {
  let summary = "matmul whose result is summed and scattered by rows";
  let description = [{
    Computes `reduce_scatter_sum(C + A·B)` over the group: the MxN sum is
    split into G blocks of M/G rows and rank r receives block r. A is MxK,
    B is KxN, C is MxN, the result is (M/G)xN; M must be divisible by G.
    As for `matmul_all_reduce`, an f32 C may have an f16 or bf16 result,
    rounded before the reduction.

    ```mlir
    %s = overlap.matmul_reduce_scatter %a, %b, %c on @tp grid_axes = [0]
        : tensor<4096x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16>
        -> tensor<512x8192xf16>
    ```
  }];
}

def Overlap_AllGatherMatmulOp : Overlap_FusedMatmulOp<"all_gather_matmul"> {
  let summary = "matmul whose left operand is gathered by rows first";
  let description = [{
    Computes `C + all_gather(A)·B`: each rank holds m rows of A (mxK), the
    gathered left operand has m·G rows in rank order, B is KxN, and C and
    the result are (m·G)xN (a column-parallel layer fed by a sequence-
    parallel activation).

    ```mlir
    %g = overlap.all_gather_matmul %a, %b, %c on @tp grid_axes = [0]
        : tensor<512x3072xf16>, tensor<3072x8192xf16>, tensor<4096x8192xf16>
        -> tensor<4096x8192xf16>
    ```
  }];
}

def Overlap_AllToAllMatmulOp : Overlap_FusedMatmulOp<"all_to_all_matmul"> {
  let summary = "experts' matmul whose tokens are dispatched by an all-to-all";
  let description = [{
    Expert parallelism's dispatch: every rank sends each rank of the group
    the tokens routed to that rank's experts, then each expert computes
    `C + tokens·B` on the tokens it received (`shard.all_to_all` followed by
    `linalg.matmul` or `linalg.batch_matmul`, fused). G is the group size.

    - Rank 2 (one expert per rank): A is TxK, G blocks of T/G token rows,
      block j going to group rank j. B is this rank's expert, KxN. C and
      the result are TxN; their block j holds the tokens that came from
      rank j (`split_axis = 0 concat_axis = 0`).
    - Rank 3 (E experts per rank): A is (G·E)xCapxK, the tokens routed to
      each of the group's G·E experts, experts j·E .. j·E+E-1 living on
      group rank j. B is ExKxN (this rank's experts). C and the result are
      Ex(G·Cap)xN: expert e's tokens from rank j are rows j·Cap .. of
      batch e (`split_axis = 0 concat_axis = 1`).

    A plan partitions the rows all experts compute (T, or E·G·Cap) into
    tiles that take an equal share of every (rank, expert) block: each
    tile is one all-to-all of its tokens and its experts' GEMMs.

    ```mlir
    %y = overlap.all_to_all_matmul %x, %w, %c on @ep grid_axes = [0]
        : tensor<8x128x1024xbf16>, tensor<2x1024x4096xbf16>,
          tensor<2x512x4096xbf16> -> tensor<2x512x4096xbf16>
    ```
  }];
}

def Overlap_MatmulAllToAllOp : Overlap_FusedMatmulOp<"matmul_all_to_all"> {
  let summary = "experts' matmul whose output is combined by an all-to-all";
  let description = [{
    Expert parallelism's combine: each expert computes `C + A·B` on the
    tokens it holds, and the result goes back to the ranks the tokens came
    from (`linalg.matmul` or `linalg.batch_matmul` followed by
    `shard.all_to_all`, fused). G is the group size.

    - Rank 2: A is TxK, G blocks of T/G rows (block j came from rank j), B
      is KxN, C is TxN; the result is TxN, block j received from rank j
      (`split_axis = 0 concat_axis = 0`).
    - Rank 3 (E experts per rank): A is Ex(G·Cap)xK, B is ExKxN, C is
      Ex(G·Cap)xN; the result is (G·E)xCapxN, experts j·E .. j·E+E-1 of
      group rank j (`split_axis = 1 concat_axis = 0`).

    ```mlir
    %z = overlap.matmul_all_to_all %h, %w2, %c on @ep grid_axes = [0]
        : tensor<2x512x4096xbf16>, tensor<2x4096x1024xbf16>,
          tensor<2x512x1024xbf16> -> tensor<8x128x1024xbf16>
    ```
  }];
}

def Overlap_ChainMatmulOp : Overlap_Op<"chain_matmul", [Pure]> {
  let summary = "product of a chain of two or more matrices";
  let description = [{
    Computes `A1·A2·…·An` (n ≥ 2) in an order that `overlap-reorder-chains`
    chooses. Operand i has shape P(i-1)xP(i); the result is P0xPn. All
    operands and the result share one element type.

    ```mlir
    %p = overlap.chain_matmul %a1, %a2, %a3
        : tensor<10x100xf32>, tensor<100x5xf32>, tensor<5x50xf32>
        -> tensor<10x50xf32>
    ```
  }];
  let arguments = (ins Variadic<Matrix>:$factors);
  let results = (outs Matrix:$result);
  let assemblyFormat = [{
    $factors attr-dict `:` type($factors) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tiles of a decomposed op
//===----------------------------------------------------------------------===//

def Overlap_TilesOp : Overlap_Op<"tiles", [
    SingleBlock, RecursiveMemoryEffects]> {
  let summary = "disjoint slices of a tensor, each replaced by its region's value";
  let description = [{
    Passes disjoint slices (static sizes, unit strides) of `dest` to the
    body as block arguments, one per slice, and returns `dest` with every slice
    replaced by the matching value of `overlap.yield`: a set of
    `tensor.extract_slice` / `tensor.insert_slice` pairs on the same
    tensor, said once. Parts of `dest` that no slice covers keep their
    contents.

    An offset may be an SSA index value (`[%row, 0]`): rank-major
    all-gather tiles write the rows of block (r + s) mod G, which depend on
    the rank. Slices with static offsets are verified to be disjoint and
    inside `dest`; for a slice with a dynamic offset both are the promise
    of whoever builds the op (overlap-decompose: (r + s) mod G is a block of
    `dest`, and distinct steps s are distinct blocks).

    It is what `overlap-decompose` emits for the tiles of a fused op.
    Bufferization views each slice of `dest`'s buffer in place (a
    `memref.subview`) and inlines the body, so one-shot bufferization
    analyses the tiles one by one rather than as one chain of inserts
    through a growing tensor, whose aliasing analysis grows with the cube
    of the number of tiles.

    ```mlir
    %r = overlap.tiles %c : tensor<256x32xf32>
        (%t0 = [0, 0] [128, 32], %t1 = [128, 0] [128, 32]) {
      %p0 = linalg.matmul ins(%a0, %b : tensor<128x64xf32>, tensor<64x32xf32>)
                          outs(%t0 : tensor<128x32xf32>) -> tensor<128x32xf32>
      %p1 = linalg.matmul ins(%a1, %b : tensor<128x64xf32>, tensor<64x32xf32>)
                          outs(%t1 : tensor<128x32xf32>) -> tensor<128x32xf32>
      overlap.yield %p0, %p1 : tensor<128x32xf32>, tensor<128x32xf32>
    }
    ```
  }];
  let arguments = (ins AnyRankedTensor:$dest, Variadic<Index>:$offsets,
                       DenseI64ArrayAttr:$static_offsets,
                       DenseI64ArrayAttr:$static_sizes);
  let results = (outs AnyRankedTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "Value":$dest, "ArrayRef<int64_t>":$offsets,
                   "ArrayRef<int64_t>":$sizes)>,
    OpBuilder<(ins "Value":$dest, "ArrayRef<OpFoldResult>":$offsets,
                   "ArrayRef<int64_t>":$sizes)>
  ];
  let extraClassDeclaration = [{
    /// Number of slices (block arguments).
    unsigned getNumTiles();
    /// Offsets and sizes of slice `i`, one entry per dimension of `dest`;
    /// a dynamic offset is ShapedType::kDynamic in getTileOffsets and its
    /// SSA value in getMixedTileOffsets.
    ArrayRef<int64_t> getTileOffsets(unsigned i);
    SmallVector<OpFoldResult> getMixedTileOffsets(unsigned i);
    /// Whether every offset of slice `i` is static.
    bool hasStaticOffsets(unsigned i);
    ArrayRef<int64_t> getTileSizes(unsigned i);
    Block &getBodyBlock() { return getBody().front(); }
    YieldOp getYield();
  }];
}

def Overlap_YieldOp : Overlap_Op<"yield", [
    Pure, Terminator, HasParent<"TilesOp">]> {
  let summary = "the new contents of the slices of an `overlap.tiles`";
  let description = [{
    Ends the body of `overlap.tiles` with one value per slice, of the
    slice's type.

    ```mlir
    overlap.yield %p0, %p1 : tensor<128x32xf32>, tensor<128x32xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

//===----------------------------------------------------------------------===//
// Tile-level collectives (tensor: value semantics; memref: in place / into)
//===----------------------------------------------------------------------===//

defvar TensorOrMemref = AnyTypeOf<[AnyRankedTensor, AnyStridedMemRef]>;

class Overlap_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Overlap_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        DeclareOpInterfaceMethods<MemoryEffectsOpInterface>])> {
  let hasVerifier = 1;
}

def Overlap_AllReduceOp : Overlap_CollectiveOp<"all_reduce"> {
  let summary = "reduce a tile over a process group";
  let description = [{
    Element-wise reduction (`sum` by default; `max`, `min`, `prod`, `avg`)
    of the operand over the group; every rank receives the result. On a
    tensor it returns a new value of the same type; on a memref it reduces
    in place and returns nothing.

    ```mlir
    %r = overlap.all_reduce %t on @tp grid_axes = [0] : tensor<512x8192xf16> -> tensor<512x8192xf16>
    overlap.all_reduce %m on @tp grid_axes = [0] reduction = <max> : memref<512x8192xf32>
    ```
  }];
  let arguments = !con((ins TensorOrMemref:$input), GroupArgs, (ins
    DefaultValuedAttr<Overlap_ReductionKindAttr,
                      "::mlir::overlap::ReductionKind::Sum">:$reduction));
  let results = (outs Optional<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes
    (`reduction` `=` $reduction^)? attr-dict
    `:` type($input) (`->` type($result)^)?
  }];
}

def Overlap_ReduceScatterOp : Overlap_CollectiveOp<"reduce_scatter"> {
  let summary = "reduce a tile over a group and scatter its row blocks";
  let description = [{
    The operand holds G row blocks; their element-wise reduction over the
    group is computed and rank r receives block r (rows/G rows). On tensors
    the result is a new value, or, with `into`, the destination tensor
    with its contents replaced (destination style: bufferization then
    writes the scattered rows straight into the destination's buffer); on
    memrefs the result is written `into` a destination buffer.

    ```mlir
    %s = overlap.reduce_scatter %t on @tp grid_axes = [0] : tensor<1024x64xf32> -> tensor<256x64xf32>
    %d = overlap.reduce_scatter %t into %slot on @tp grid_axes = [0] : tensor<1024x64xf32>, tensor<256x64xf32> -> tensor<256x64xf32>
    overlap.reduce_scatter %src into %dst on @tp grid_axes = [0] : memref<1024x64xf32>, memref<256x64xf32>
    ```
  }];
  let arguments = !con((ins TensorOrMemref:$input,
                            Optional<TensorOrMemref>:$init), GroupArgs, (ins
    DefaultValuedAttr<Overlap_ReductionKindAttr,
                      "::mlir::overlap::ReductionKind::Sum">:$reduction));
  let results = (outs Optional<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    $input (`into` $init^)? `on` $grid `grid_axes` `=` $grid_axes
    (`reduction` `=` $reduction^)? attr-dict
    `:` type($input) (`,` type($init)^)? (`->` type($result)^)?
  }];
}

def Overlap_AllGatherOp : Overlap_CollectiveOp<"all_gather"> {
  let summary = "gather a tile's rows from every rank of a group";
  let description = [{
    Concatenates the operand of every rank of the group along rows, in rank
    order (G times the rows). On tensors the result is a new value, or,
    with `into`, the destination tensor with its contents replaced; on
    memrefs it is written `into` a destination buffer.

    ```mlir
    %g = overlap.all_gather %t on @tp grid_axes = [0] : tensor<128x64xf16> -> tensor<512x64xf16>
    overlap.all_gather %src into %dst on @tp grid_axes = [0] : memref<128x64xf16>, memref<512x64xf16>
    ```
  }];
  let arguments = !con((ins TensorOrMemref:$input,
                            Optional<TensorOrMemref>:$init), GroupArgs);
  let results = (outs Optional<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    $input (`into` $init^)? `on` $grid `grid_axes` `=` $grid_axes attr-dict
    `:` type($input) (`,` type($init)^)? (`->` type($result)^)?
  }];
}

def Overlap_AllToAllOp : Overlap_CollectiveOp<"all_to_all"> {
  let summary = "exchange a tile's row blocks between the ranks of a group";
  let description = [{
    The operand holds G blocks of rows/G rows (G = the group size); block j
    goes to group rank j, and block j of the output comes from group rank
    j (that rank's block r, for this rank r). The output has the input's
    type. On tensors the result is a new value, or, with `into`, the
    destination tensor with its contents replaced; on memrefs it is
    written `into` a destination buffer, which must not alias the input.

    ```mlir
    %x = overlap.all_to_all %t on @ep grid_axes = [0] : tensor<8x32x64xf32> -> tensor<8x32x64xf32>
    overlap.all_to_all %src into %dst on @ep grid_axes = [0] : memref<8x32x64xf32>, memref<8x32x64xf32>
    ```
  }];
  let arguments = !con((ins TensorOrMemref:$input,
                            Optional<TensorOrMemref>:$init), GroupArgs);
  let results = (outs Optional<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    $input (`into` $init^)? `on` $grid `grid_axes` `=` $grid_axes attr-dict
    `:` type($input) (`,` type($init)^)? (`->` type($result)^)?
  }];
}

def Overlap_ShiftOp : Overlap_CollectiveOp<"shift"> {
  let summary = "send a tile to the group rank `offset` ahead, receive from the one behind";
  let description = [{
    A collective permute by a fixed offset: group rank r sends its operand
    to group rank (r + offset) mod G and receives the operand of group rank
    (r - offset) mod G (G = the group size; every rank runs it with the same
    offset). The output has the input's type. It is the point-to-point
    exchange of a rank-major tile (overlap-decompose): each rank computes
    or holds one contiguous block of rows and hands it to one peer. On
    tensors the result is a new value, or, with `into`, the destination
    tensor with its contents replaced; on memrefs it is written `into` a
    destination buffer, which must not alias the input unless the offset is
    a multiple of G (then the op is a copy). The runtime call is
    `overlap_shift` (NCCL: one ncclSend and one ncclRecv in a group).
    `with_next` (set by overlap-decompose on every exchange of a grouped
    rank-major tile but its last) makes this shift and the next one on its
    stream one call: the lowering encloses them in `overlap_fuse_begin` /
    `overlap_fuse_end` (one NCCL launch, one per-call latency) and enqueues
    the signals that fall between them after the end.

    ```mlir
    %x = overlap.shift %t by 3 on @tp grid_axes = [0] : tensor<256x64xf32> -> tensor<256x64xf32>
    overlap.shift %src by -1 into %dst on @tp grid_axes = [0] : memref<256x64xf32>, memref<256x64xf32>
    ```
  }];
  let arguments = !con((ins TensorOrMemref:$input,
                            Optional<TensorOrMemref>:$init), GroupArgs,
                       (ins I64Attr:$offset, UnitAttr:$with_next));
  let results = (outs Optional<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    $input `by` $offset (`into` $init^)? `on` $grid `grid_axes` `=` $grid_axes
    attr-dict `:` type($input) (`,` type($init)^)? (`->` type($result)^)?
  }];
}

//===----------------------------------------------------------------------===//
// GEMM with its operands as they lie
//===----------------------------------------------------------------------===//

def Overlap_GemmOp : Overlap_Op<"gemm", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "a GEMM that reads transposed operands in place and writes "
                "without a fill or a rounding pass";
  let description = [{
    `init` (rank 2: m x n; rank 3: batch x m x n) receives
    `(accumulate ? init : 0) + op(a) . op(b)`, where op(x) is x or, with
    `transpose_a` / `transpose_b`, its transpose over the last two
    dimensions: `a` is m x k (k x m transposed), `b` k x n (n x k
    transposed: a weight in PyTorch's [out, in] layout) or a batch of them.
    A rank-2 `b` with a rank-3 `init` is one matrix for every batch entry.
    `a` and `b` have one element type (f16, bf16, f32); `init` has f32 or
    that type. Products are summed in f32 in the order init (or +0.0), then
    k = 0, 1, ..., and rounded once to init's element type: an f16/bf16
    `init` without `accumulate` is the f32 contraction rounded in the GEMM's
    epilogue, bit for bit what a linalg.matmul into a zero-filled f32
    buffer followed by `arith.truncf` gives. It is one `overlap_gemm` call
    (its transpose and overwrite flags); overlap-fold-into-gemms creates it
    from linalg contractions whose operands are transposes, concatenations,
    zero fills or roundings, so that none of those is materialized. On
    tensors the result is `init`'s new contents (destination style); on
    memrefs `init` is written in place.

    ```mlir
    %y = overlap.gemm %x, %w into %e {transpose_b} : tensor<128x64xbf16>, tensor<32x64xbf16>, tensor<128x32xbf16> -> tensor<128x32xbf16>
    overlap.gemm %a, %b into %c {accumulate} : memref<8x16x64xf32>, memref<64x32xf32>, memref<8x16x32xf32>
    ```
  }];
  let arguments = (ins TensorOrMemref:$a, TensorOrMemref:$b,
                       TensorOrMemref:$init, UnitAttr:$transpose_a,
                       UnitAttr:$transpose_b, UnitAttr:$accumulate);
  let results = (outs Optional<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    $a `,` $b `into` $init attr-dict `:` type($a) `,` type($b) `,`
    type($init) (`->` type($result)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether `init` is rank 3 (a batch of GEMMs).
    bool isBatched() {
      return ::llvm::cast<::mlir::ShapedType>(getInit().getType()).getRank() == 3;
    }
    /// m, n and k (ShapedType::kDynamic where not static).
    int64_t getM();
    int64_t getN();
    int64_t getK();
  }];
}

//===----------------------------------------------------------------------===//
// Stream scheduling
//===----------------------------------------------------------------------===//

def Overlap_SignalsOp : Overlap_Op<"signals", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "allocate a set of cross-stream signal flags";
  let description = [{
    Creates N flags for `overlap.signal` / `overlap.wait`; N is the count of
    the result type.

    ```mlir
    %sig = overlap.signals : !overlap.signals<5>
    ```
  }];
  let results = (outs Overlap_SignalsType:$signals);
  let assemblyFormat = "attr-dict `:` qualified(type($signals))";
}

class Overlap_FlagOp<string mnemonic> : Overlap_Op<mnemonic, [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let arguments = (ins Overlap_SignalsType:$signals, I64Attr:$index);
  let assemblyFormat = [{
    $signals `[` $index `]` attr-dict `:` qualified(type($signals))
  }];
  let hasVerifier = 1;
}

def Overlap_SignalOp : Overlap_FlagOp<"signal"> {
  let summary = "raise a flag once all earlier work of this stream is done";
  let description = [{
    Raises flag `index` of `signals` after every op before it in the same
    `overlap.stream` has completed. Must be inside an `overlap.stream`.

    ```mlir
    overlap.signal %sig[0] : !overlap.signals<5>
    ```
  }];
}

def Overlap_WaitOp : Overlap_FlagOp<"wait"> {
  let summary = "hold this stream until a flag is raised";
  let description = [{
    Later ops of the enclosing `overlap.stream` start only after flag
    `index` of `signals` is raised by an `overlap.signal` in another stream
    of the same `overlap.concurrent`; a wait that no other stream can
    satisfy is rejected by the verifier (it would hang).

    ```mlir
    overlap.wait %sig[0] : !overlap.signals<5>
    ```
  }];
}

def Overlap_ConcurrentOp : Overlap_Op<"concurrent", [
    SingleBlock, NoTerminator, RecursiveMemoryEffects]> {
  let summary = "run the contained streams concurrently, then join";
  let description = [{
    Holds `overlap.stream` regions that run concurrently; they are ordered
    with each other only by `overlap.signal` / `overlap.wait`. Ops after the
    `overlap.concurrent` see the effects of every stream (all are joined).

    ```mlir
    overlap.concurrent {
      overlap.stream compute {
        linalg.matmul ins(%a0, %b : memref<512x3072xf16>, memref<3072x8192xf16>)
                      outs(%c0 : memref<512x8192xf16>)
        overlap.signal %sig[0] : !overlap.signals<5>
      }
      overlap.stream comm {
        overlap.wait %sig[0] : !overlap.signals<5>
        overlap.all_reduce %c0 on @tp grid_axes = [0] : memref<512x8192xf16>
      }
    }
    ```
  }];
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$body attr-dict";
  let hasVerifier = 1;
}

def Overlap_StreamOp : Overlap_Op<"stream", [
    SingleBlock, NoTerminator, RecursiveMemoryEffects,
    HasParent<"ConcurrentOp">]> {
  let summary = "a sequential program on one device queue";
  let description = [{
    The body runs in order on one queue (a CUDA stream, or a worker thread
    on the host backend). The name (`compute`, `comm`, or any other
    identifier) is unique within its `overlap.concurrent`.

    ```mlir
    overlap.stream comm {
      overlap.wait %sig[0] : !overlap.signals<1>
      overlap.all_reduce %c0 on @tp grid_axes = [0] : memref<512x8192xf16>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "custom<StreamName>($name) $body attr-dict";
  let hasVerifier = 1;
}

#endif // OVERLAP_DIALECT_OVERLAP_IR_OVERLAPOPS_TD

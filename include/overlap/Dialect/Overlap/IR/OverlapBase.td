//===- OverlapBase.td - Overlap dialect definition ---------*- tablegen -*-===//
//
// The `overlap` dialect: tensor-parallel matmuls fused with collectives, the
// tiles they decompose into, and the two-stream schedule that runs them.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_IR_OVERLAPBASE_TD
#define OVERLAP_DIALECT_OVERLAP_IR_OVERLAPBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Overlap_Dialect : Dialect {
  let name = "overlap";
  let cppNamespace = "::mlir::overlap";
  let summary = "Overlap communication of tensor-parallel matmuls with compute";
  let description = [{
    The `overlap` dialect describes a matrix multiplication fused with the
    collective that consumes its result (all-reduce, reduce-scatter) or
    produces its left operand (all-gather), over the process group of an
    upstream `shard.grid`. Such a fused op is planned (`#overlap.plan`),
    decomposed along M into tiles (tile-level collectives), and scheduled on
    two streams joined by `overlap.signal` / `overlap.wait` inside
    `overlap.concurrent`.

    Process groups are named by a `shard.grid` symbol and a list of grid
    axes; the group size is the product of the grid's extents along those
    axes (an empty list is a group of one).
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the discardable attribute that carries a fused op's plan.
    static constexpr ::llvm::StringLiteral getPlanAttrName() {
      return ::llvm::StringLiteral("overlap.plan");
    }
    /// Name of the discardable attribute that carries a chain node's fusion.
    static constexpr ::llvm::StringLiteral getFusionAttrName() {
      return ::llvm::StringLiteral("overlap.fusion");
    }
  }];
}

class Overlap_Op<string mnemonic, list<Trait> traits = []>
    : Op<Overlap_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Overlap_ReductionKind : I32EnumAttr<"ReductionKind",
    "reduction applied by a collective", [
  I32EnumAttrCase<"Sum", 0, "sum">,
  I32EnumAttrCase<"Max", 1, "max">,
  I32EnumAttrCase<"Min", 2, "min">,
  I32EnumAttrCase<"Prod", 3, "prod">,
  I32EnumAttrCase<"Avg", 4, "avg">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::overlap";
}

def Overlap_ReductionKindAttr
    : EnumAttr<Overlap_Dialect, Overlap_ReductionKind, "reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

def Overlap_Bound : I32EnumAttr<"Bound",
    "which leg of an overlapped op bounds its time", [
  I32EnumAttrCase<"Compute", 0, "compute">,
  I32EnumAttrCase<"Comm", 1, "comm">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::overlap";
}

def Overlap_Fusion : I32EnumAttr<"Fusion",
    "how a matrix-chain node is fused with a child (TEE-ACM2)", [
  I32EnumAttrCase<"None", 0, "none">,
  I32EnumAttrCase<"Left", 1, "left">,
  I32EnumAttrCase<"Right", 2, "right">
]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::overlap";
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

class Overlap_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Overlap_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Overlap_SignalsType : Overlap_Type<"Signals", "signals"> {
  let summary = "a set of cross-stream signal flags";
  let description = [{
    `!overlap.signals<N>` is a set of N flags that one stream raises with
    `overlap.signal` and another stream waits on with `overlap.wait`. The
    flags are counted by epoch in the runtime, so they need no reset between
    calls of the enclosing function.
  }];
  let parameters = (ins "int64_t":$count);
  let assemblyFormat = "`<` $count `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Overlap_PlanAttr : AttrDef<Overlap_Dialect, "Plan"> {
  let mnemonic = "plan";
  let summary = "the tiling decision for one fused op";
  let description = [{
    Records how a fused op is split along M and what the Planner predicted:

    ```mlir
    #overlap.plan<tiles = [512, 896, 896, 896, 896], strategy = "mc2",
                  bound = comm, predicted_us = 1387.4, serial_us = 1733.9>
    ```

    `tiles` partition the rows of the full product (M of A for all-reduce
    and reduce-scatter, M of the result for all-gather) in order. For
    reduce-scatter and all-gather, tile i takes `tiles[i] / G` rows from
    each rank's block, so every tile must be divisible by the group size G.
    `bound` names the leg that is longer when run serially. A single tile
    means the Planner found no overlap that wins.

    `layout = "rank-major"` (reduce-scatter and all-gather only; printed
    only when given) says the tiles are chunks of whole rank blocks instead:
    the G blocks of M/G rows are cut the same way into chunks, and the
    tiles list G groups of those chunk rows in the order they run
    (reduce-scatter: the blocks of group ranks r+1, ..., r+G-1, then r's
    own; all-gather: r's own, then r+1, ...). Each tile is one contiguous
    GEMM and one point-to-point exchange (`overlap.shift`); the Planner's
    `RankMajorLayout` is the rule.

    `groups` (rank-major only; printed when given) groups consecutive
    tiles into one exchange each: the GEMMs of a group's tiles, then their
    shifts as one call. Without it every tile is its own group.

    ```mlir
    #overlap.plan<tiles = [256, 256, 256, 256], strategy = "rank-major",
                  bound = comm, predicted_us = 80.5, serial_us = 96.0,
                  layout = "rank-major", groups = [1, 2, 1]>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t", "row counts of the tiles">:$tiles,
    StringRefParameter<"strategy that chose the tiles">:$strategy,
    "::mlir::overlap::Bound":$bound,
    APFloatParameter<"predicted time of the overlapped op (us)">:$predictedUs,
    APFloatParameter<"time of the unsplit matmul then collective (us)">:$serialUs,
    StringRefParameter<"how the tiles address the rows: interleaved or "
                       "rank-major", "\"interleaved\"">:$layout,
    OptionalArrayRefParameter<"int64_t",
        "rank-major: units (tiles) per exchange group, in order">:$groups
  );
  let builders = [
    AttrBuilder<(ins "::llvm::ArrayRef<int64_t>":$tiles,
                     "::llvm::StringRef":$strategy,
                     "::mlir::overlap::Bound":$bound,
                     "double":$predictedUs, "double":$serialUs,
                     CArg<"::llvm::StringRef", "\"interleaved\"">:$layout,
                     CArg<"::llvm::ArrayRef<int64_t>", "{}">:$groups), [{
      return $_get($_ctxt, tiles, strategy, bound,
                   ::llvm::APFloat(predictedUs), ::llvm::APFloat(serialUs),
                   layout, groups);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Sum of the tile sizes (the rows this plan covers).
    int64_t getTotalRows() const;
    /// Whether the tiles are chunks of whole rank blocks (`layout =
    /// "rank-major"`).
    bool isRankMajor() const { return getLayout() == "rank-major"; }
  }];
}

def Overlap_FusionAttr : AttrDef<Overlap_Dialect, "Fusion"> {
  let mnemonic = "fusion";
  let summary = "the fusion decision for one node of a matrix chain";
  let description = [{
    Recorded by `overlap-reorder-chains` on each `linalg.matmul` of a chain
    it rebuilt: whether the product is fused with its left child
    ((A·B)·C computed tile by tile without writing A·B out), its right
    child, or neither; the tile (x, y) of the chosen option for a fast
    memory of the size the pass was given; and the modelled global data
    transfers (elements) of the subtree.

    ```mlir
    #overlap.fusion<left, tile = [64, 96], transfers = 123456>
    ```
  }];
  let parameters = (ins
    EnumParameter<Overlap_Fusion>:$decision,
    "int64_t":$tileX,
    "int64_t":$tileY,
    "int64_t":$transfers
  );
  let assemblyFormat = [{
    `<` $decision `,` `tile` `=` `[` $tileX `,` $tileY `]` `,`
    `transfers` `=` $transfers `>`
  }];
}

#endif // OVERLAP_DIALECT_OVERLAP_IR_OVERLAPBASE_TD

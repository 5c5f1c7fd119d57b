//===- OverlapOps.cpp - Overlap dialect operations -----------*- C++ -*-===//
//
// Verifiers, symbol checks and memory effects of the `overlap` ops. Every
// error names the operand or attribute at fault and the expected vs actual
// value.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::overlap;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// "4096x3072", with `?` for dynamic extents.
static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << "?";
        else
          os << d;
      },
      "x");
  return text;
}

static bool bothStatic(int64_t x, int64_t y) {
  return !ShapedType::isDynamic(x) && !ShapedType::isDynamic(y);
}

int64_t mlir::overlap::getGroupSize(shard::GridOp grid,
                                    ArrayRef<int16_t> gridAxes) {
  ArrayRef<int64_t> shape = grid.getShape();
  int64_t size = 1;
  for (int16_t axis : gridAxes) {
    int64_t extent = shape[axis];
    if (ShapedType::isDynamic(extent))
      return ShapedType::kDynamic;
    size *= extent;
  }
  return size;
}

int64_t mlir::overlap::groupSizeOf(Operation *op,
                                   SymbolTableCollection &symbols) {
  auto gridSym = op->getAttrOfType<FlatSymbolRefAttr>("grid");
  auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
  if (!gridSym || !axes)
    return ShapedType::kDynamic;
  auto grid = symbols.lookupNearestSymbolFrom<shard::GridOp>(op, gridSym);
  return grid ? getGroupSize(grid, axes.asArrayRef()) : ShapedType::kDynamic;
}

FailureOr<shard::GridOp>
mlir::overlap::verifyGroup(Operation *op, FlatSymbolRefAttr gridSymbol,
                           ArrayRef<int16_t> gridAxes,
                           SymbolTableCollection &symbolTable) {
  Operation *symbol =
      symbolTable.lookupNearestSymbolFrom(op, gridSymbol.getAttr());
  if (!symbol)
    return op->emitOpError() << "grid " << gridSymbol
                             << " does not name a symbol in scope; expected "
                                "a 'shard.grid'";
  auto grid = dyn_cast<shard::GridOp>(symbol);
  if (!grid)
    return op->emitOpError()
           << "grid " << gridSymbol << " names a '" << symbol->getName()
           << "', expected a 'shard.grid'";
  llvm::SmallSet<int16_t, 4> seen;
  for (int16_t axis : gridAxes) {
    if (axis < 0 || axis >= grid.getRank())
      return op->emitOpError()
             << "grid axis " << axis << " is out of range for grid "
             << gridSymbol << " of rank " << grid.getRank() << " (valid: 0.."
             << grid.getRank() - 1 << ")";
    if (!seen.insert(axis).second)
      return op->emitOpError()
             << "grid axis " << axis << " is repeated in grid_axes";
  }
  return grid;
}

/// verifyGroup on an op's `grid` and `grid_axes`, then the group's size
/// (dynamic where the grid's shape is).
template <typename OpTy>
static FailureOr<int64_t> verifyGroupSize(OpTy op,
                                          SymbolTableCollection &symbolTable) {
  FailureOr<shard::GridOp> grid =
      verifyGroup(op, op.getGridAttr(), op.getGridAxes(), symbolTable);
  if (failed(grid))
    return failure();
  return getGroupSize(*grid, op.getGridAxes());
}

/// Element types a matmul may take its factors in.
static bool isMatmulElementType(Type type) {
  return type.isF16() || type.isBF16() || type.isF32();
}

//===----------------------------------------------------------------------===//
// Fused matmul ops
//===----------------------------------------------------------------------===//

namespace {
enum class FusedKind { AllReduce, ReduceScatter, AllGather };
} // namespace

/// A and B share an f16/bf16/f32 element type; C's (and the result's) is
/// theirs or f32.
static LogicalResult verifyMatmulElementTypes(Operation *op, RankedTensorType a,
                                              RankedTensorType b,
                                              RankedTensorType c,
                                              RankedTensorType result,
                                              bool narrowingResult = false) {
  Type elemA = a.getElementType(), elemB = b.getElementType();
  Type elemC = c.getElementType();
  if (!isMatmulElementType(elemA))
    return op->emitOpError() << "operand A has element type " << elemA
                             << "; expected f16, bf16 or f32";
  if (elemB != elemA)
    return op->emitOpError()
           << "operand B has element type " << elemB << " but A has " << elemA
           << "; A and B must share an element type";
  if (elemC != elemA && !elemC.isF32())
    return op->emitOpError()
           << "accumulator C has element type " << elemC
           << "; expected the factors' type " << elemA << " or f32";
  Type elemR = result.getElementType();
  // An all-reduce or reduce-scatter may round an f32 sum to f16/bf16
  // before the collective (the cast a frontend writes before its psum).
  bool narrowed =
      narrowingResult && elemC.isF32() && (elemR.isF16() || elemR.isBF16());
  if (elemR != elemC && !narrowed)
    return op->emitOpError()
           << "result has element type " << elemR
           << " but the accumulator C has " << elemC
           << (narrowingResult
                   ? "; they must be the same, or C f32 and the result f16 "
                     "or bf16 (rounded before the collective)"
                   : "; they must be the same");

  return success();
}

/// K of A (its last dimension) and of B (its second to last) agree, and N
/// of B (its last) and of C and the result (theirs); all of the same rank.
static LogicalResult verifyContraction(Operation *op, RankedTensorType a,
                                       RankedTensorType b, RankedTensorType c,
                                       RankedTensorType result) {
  int64_t rank = a.getRank();
  int64_t k = a.getDimSize(rank - 1), kB = b.getDimSize(rank - 2);
  if (bothStatic(k, kB) && k != kB)
    return op->emitOpError()
           << "K mismatch: A is " << formatShape(a.getShape()) << " (K = " << k
           << ") but B is " << formatShape(b.getShape()) << " (K = " << kB
           << ")";
  int64_t n = b.getDimSize(rank - 1);
  for (auto [name, type] :
       {std::pair<StringRef, RankedTensorType>{"C", c}, {"result", result}}) {
    int64_t got = type.getDimSize(rank - 1);
    if (bothStatic(n, got) && n != got)
      return op->emitOpError()
             << "N mismatch: B is " << formatShape(b.getShape())
             << " (N = " << n << ") but " << name << " is "
             << formatShape(type.getShape()) << " (N = " << got << ")";
  }
  return success();
}

/// Checks what every fused op shares: rank-2 operands, K and N agreement,
/// element types, and the rows that do not depend on the group size.
static LogicalResult verifyFusedMatmul(Operation *op, FusedKind kind,
                                       RankedTensorType a, RankedTensorType b,
                                       RankedTensorType c,
                                       RankedTensorType result) {
  for (auto [name, type] : {std::pair<StringRef, RankedTensorType>{"A", a},
                            {"B", b},
                            {"C", c},
                            {"result", result}}) {
    if (type.getRank() != 2)
      return op->emitOpError()
             << "operand " << name << " must be a rank-2 tensor, got rank "
             << type.getRank() << " (" << type << ")";
  }

  if (failed(verifyMatmulElementTypes(op, a, b, c, result,
                                      kind != FusedKind::AllGather)))
    return failure();

  if (failed(verifyContraction(op, a, b, c, result)))
    return failure();

  int64_t rowsA = a.getDimSize(0), rowsC = c.getDimSize(0);
  if (kind != FusedKind::AllGather && bothStatic(rowsA, rowsC) &&
      rowsA != rowsC)
    return op->emitOpError()
           << "M mismatch: A has " << rowsA << " rows but C has " << rowsC;
  if (kind != FusedKind::ReduceScatter) {
    int64_t rowsR = result.getDimSize(0);
    if (bothStatic(rowsC, rowsR) && rowsC != rowsR)
      return op->emitOpError() << "result has " << rowsR << " rows but C has "
                               << rowsC << "; they must be the same";
  }
  return success();
}

/// Checks a plan's tiles against the rows of the op it is attached to, and
/// (when the group size is known) their divisibility by it.
/// A rank-major plan (PlanAttr): only reduce-scatter and all-gather; the
/// tiles are G groups that cut every rank's block the same way.
static LogicalResult verifyRankMajorTiles(Operation *op, PlanAttr plan,
                                          int64_t groupSize) {
  if (!isa<MatmulReduceScatterOp, AllGatherMatmulOp>(op))
    return op->emitOpError() << "plan layout \"rank-major\" is only for "
                                "reduce-scatter and all-gather matmuls";
  if (ShapedType::isDynamic(groupSize))
    return success();
  ArrayRef<int64_t> tiles = plan.getTiles();
  if (groupSize < 2 || tiles.size() % groupSize != 0)
    return op->emitOpError()
           << "rank-major plan has " << tiles.size()
           << " tiles, expected the chunks of each of the " << groupSize
           << " ranks' blocks (a multiple of " << groupSize << ", group >= 2)";
  size_t chunks = tiles.size() / groupSize;
  for (size_t t = chunks; t < tiles.size(); ++t)
    if (tiles[t] != tiles[t % chunks])
      return op->emitOpError()
             << "rank-major plan tile #" << t << " has " << tiles[t]
             << " rows where the first block's chunk #" << t % chunks
             << " has " << tiles[t % chunks]
             << "; every rank's block is cut the same way";
  return success();
}

static LogicalResult verifyPlanTiles(Operation *op, int64_t plannedRows,
                                     int64_t groupSize, bool tilesPerRank,
                                     StringRef blocks = "the group size") {
  auto plan = op->getAttrOfType<PlanAttr>(OverlapDialect::getPlanAttrName());
  if (!plan)
    return success();
  if (!ShapedType::isDynamic(plannedRows) && plan.getTotalRows() != plannedRows)
    return op->emitOpError()
           << "plan tiles [" << plan.getTiles() << "] sum to "
           << plan.getTotalRows() << " rows, expected M = " << plannedRows;
  if (plan.isRankMajor())
    return verifyRankMajorTiles(op, plan, groupSize);
  if (tilesPerRank && !ShapedType::isDynamic(groupSize))
    for (auto [i, rows] : llvm::enumerate(plan.getTiles()))
      if (rows % groupSize != 0)
        return op->emitOpError()
               << "plan tile #" << i << " has " << rows
               << " rows, not divisible by " << blocks << " " << groupSize
               << " (each tile takes an equal share of every rank's block)";
  return success();
}

#define OVERLAP_FUSED_VERIFY(OpTy, Kind)                                       \
  LogicalResult OpTy::verify() {                                               \
    if (failed(verifyFusedMatmul(*this, Kind, getA().getType(),                \
                                 getB().getType(), getC().getType(),           \
                                 getResult().getType())))                      \
      return failure();                                                        \
    return verifyPlanTiles(*this, getPlannedRows(), ShapedType::kDynamic,      \
                           false);                                             \
  }
OVERLAP_FUSED_VERIFY(MatmulAllReduceOp, FusedKind::AllReduce)
OVERLAP_FUSED_VERIFY(MatmulReduceScatterOp, FusedKind::ReduceScatter)
OVERLAP_FUSED_VERIFY(AllGatherMatmulOp, FusedKind::AllGather)
#undef OVERLAP_FUSED_VERIFY

int64_t MatmulAllReduceOp::getPlannedRows() {
  return getA().getType().getDimSize(0);
}
int64_t MatmulReduceScatterOp::getPlannedRows() {
  return getA().getType().getDimSize(0);
}
int64_t AllGatherMatmulOp::getPlannedRows() {
  return getResult().getType().getDimSize(0);
}

LogicalResult
MatmulAllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyGroup(*this, getGridAttr(), getGridAxes(), symbolTable);
}

LogicalResult
MatmulReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> verified = verifyGroupSize(*this, symbolTable);
  if (failed(verified))
    return failure();
  int64_t group = *verified;
  int64_t m = getA().getType().getDimSize(0);
  int64_t rows = getResult().getType().getDimSize(0);
  if (!ShapedType::isDynamic(group) && !ShapedType::isDynamic(m)) {
    if (m % group != 0)
      return emitOpError() << "rows of A (M = " << m
                           << ") are not divisible by the group size " << group
                           << " of the reduce-scatter";
    if (!ShapedType::isDynamic(rows) && rows != m / group)
      return emitOpError() << "result has " << rows
                           << " rows, expected M / group size = " << m << " / "
                           << group << " = " << m / group;
  }
  return verifyPlanTiles(*this, getPlannedRows(), group, true);
}

LogicalResult
AllGatherMatmulOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> verified = verifyGroupSize(*this, symbolTable);
  if (failed(verified))
    return failure();
  int64_t group = *verified;
  int64_t local = getA().getType().getDimSize(0);
  int64_t rows = getC().getType().getDimSize(0);
  if (!ShapedType::isDynamic(group) && bothStatic(local, rows) &&
      rows != local * group)
    return emitOpError() << "C has " << rows
                         << " rows, expected local rows of A x group size = "
                         << local << " x " << group << " = " << local * group;
  return verifyPlanTiles(*this, getPlannedRows(), group, true);
}

//===----------------------------------------------------------------------===//
// All-to-all fused ops (expert parallelism)
//===----------------------------------------------------------------------===//

bool mlir::overlap::isFusedMatmul(Operation *op) {
  return isa<MatmulAllReduceOp, MatmulReduceScatterOp, AllGatherMatmulOp,
             AllToAllMatmulOp, MatmulAllToAllOp>(op);
}

bool mlir::overlap::isTileCollective(Operation *op) {
  return isa<AllReduceOp, ReduceScatterOp, AllGatherOp, AllToAllOp,
             ShiftOp>(op);
}

int64_t mlir::overlap::getExpertsPerRank(Operation *op) {
  if (!isa<AllToAllMatmulOp, MatmulAllToAllOp>(op))
    return 1;
  auto b = cast<RankedTensorType>(op->getOperand(1).getType());
  return b.getRank() == 3 ? b.getDimSize(0) : 1;
}

static int64_t mulStatic(int64_t x, int64_t y) {
  return bothStatic(x, y) ? x * y : ShapedType::kDynamic;
}

/// Rank 2 or 3 for A, B, C and the result alike; K and N agree; element
/// types as for every fused matmul.
static LogicalResult verifyExpertMatmul(Operation *op, RankedTensorType a,
                                        RankedTensorType b, RankedTensorType c,
                                        RankedTensorType result) {
  int64_t rank = a.getRank();
  if (rank != 2 && rank != 3)
    return op->emitOpError()
           << "operand A must be a rank-2 (tokens x K, one expert per rank) "
              "or rank-3 (experts x tokens x K) tensor, got rank "
           << rank << " (" << a << ")";
  for (auto [name, type] : {std::pair<StringRef, RankedTensorType>{"B", b},
                            {"C", c},
                            {"result", result}})
    if (type.getRank() != rank)
      return op->emitOpError()
             << "operand " << name << " must have A's rank " << rank
             << ", got rank " << type.getRank() << " (" << type << ")";
  if (failed(verifyMatmulElementTypes(op, a, b, c, result)))
    return failure();
  return verifyContraction(op, a, b, c, result);
}

/// `what` of `x` and `y` must agree where both are static.
static LogicalResult verifySame(Operation *op, StringRef what, StringRef xName,
                                int64_t x, StringRef yName, int64_t y) {
  if (bothStatic(x, y) && x != y)
    return op->emitOpError() << what << " mismatch: " << xName << " has " << x
                             << " but " << yName << " has " << y;
  return success();
}

/// Checks `got` against `factor` x `per` (the group's share of a
/// dimension) where all are static.
static LogicalResult verifyGroupScaled(Operation *op, StringRef what,
                                       int64_t got, int64_t group, int64_t per,
                                       StringRef perName) {
  if (ShapedType::isDynamic(group) || !bothStatic(got, per))
    return success();
  if (got != group * per)
    return op->emitOpError()
           << what << " is " << got << ", expected the group size x " << perName
           << " = " << group << " x " << per << " = " << group * per;
  return success();
}

static LogicalResult verifyTokenBlocks(Operation *op, StringRef what,
                                       int64_t rows, int64_t group) {
  if (!ShapedType::isDynamic(group) && !ShapedType::isDynamic(rows) &&
      rows % group != 0)
    return op->emitOpError()
           << what << " (" << rows << ") are not divisible by the group size "
           << group
           << "; the all-to-all sends every rank an equal block "
              "(pad the token count to a multiple of the group size)";
  return success();
}

namespace {
/// A tensor of an all-to-all fused op and how messages name it.
struct NamedType {
  RankedTensorType type;
  StringRef name;
};
} // namespace

/// Symbol checks of both all-to-all fused ops: the tokens divide into the
/// group's blocks, and in the rank-3 form `spread` ((G E) x Cap x ..., laid
/// out by the rank each expert lives on: A for dispatch, the result for
/// combine) and `byExpert` (E x (G Cap) x ...: C for dispatch, A for
/// combine) agree with the group size; plan tiles divide by the G x E
/// blocks.
template <typename OpTy>
static LogicalResult verifyExpertGroup(OpTy op,
                                       SymbolTableCollection &symbolTable,
                                       NamedType spread, NamedType byExpert) {
  FailureOr<int64_t> verified = verifyGroupSize(op, symbolTable);
  if (failed(verified))
    return failure();
  int64_t group = *verified;
  RankedTensorType a = op.getA().getType();
  int64_t experts = 1;
  if (a.getRank() == 2) {
    if (failed(
            verifyTokenBlocks(op, "token rows of A", a.getDimSize(0), group)))
      return failure();
  } else {
    experts = byExpert.type.getDimSize(0);
    if (failed(verifyGroupScaled(
            op, (spread.name + "'s expert count (dimension 0)").str(),
            spread.type.getDimSize(0), group, experts, "experts per rank")) ||
        failed(verifyGroupScaled(
            op, (byExpert.name + "'s tokens per expert (dimension 1)").str(),
            byExpert.type.getDimSize(1), group, spread.type.getDimSize(1),
            (spread.name + "'s capacity (dimension 1)").str())))
      return failure();
  }
  return verifyPlanTiles(op, op.getPlannedRows(), mulStatic(group, experts),
                         true, "the (rank, expert) blocks");
}

/// The verifier of both all-to-all fused ops: verifyExpertMatmul, the
/// op's own row checks, then its plan's tiles.
template <typename OpTy>
static LogicalResult
verifyExpertOp(OpTy op,
               function_ref<LogicalResult(RankedTensorType, RankedTensorType,
                                          RankedTensorType, RankedTensorType)>
                   verifyRows) {
  RankedTensorType a = op.getA().getType(), b = op.getB().getType(),
                   c = op.getC().getType(), r = op.getResult().getType();
  if (failed(verifyExpertMatmul(op, a, b, c, r)) ||
      failed(verifyRows(a, b, c, r)))
    return failure();
  return verifyPlanTiles(op, op.getPlannedRows(), ShapedType::kDynamic, false);
}

/// Rows a plan of an all-to-all fused op tiles in `type`: its tokens
/// (rank 2) or experts x capacity (rank 3).
static int64_t expertRows(RankedTensorType type) {
  return type.getRank() == 2
             ? type.getDimSize(0)
             : mulStatic(type.getDimSize(0), type.getDimSize(1));
}

LogicalResult AllToAllMatmulOp::verify() {
  return verifyExpertOp(
      *this,
      [&](RankedTensorType a, RankedTensorType b, RankedTensorType c,
          RankedTensorType r) -> LogicalResult {
        if (c != r)
          return emitOpError()
                 << "result type " << r << " differs from C's " << c;
        if (a.getRank() == 2)
          return verifySame(*this, "tokens", "A", a.getDimSize(0), "C",
                            c.getDimSize(0));
        return verifySame(*this, "experts per rank", "B", b.getDimSize(0), "C",
                          c.getDimSize(0));
      });
}

int64_t AllToAllMatmulOp::getPlannedRows() {
  return expertRows(getC().getType());
}

LogicalResult
AllToAllMatmulOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyExpertGroup(*this, symbolTable, {getA().getType(), "A"},
                           {getC().getType(), "C"});
}

LogicalResult MatmulAllToAllOp::verify() {
  return verifyExpertOp(
      *this,
      [&](RankedTensorType a, RankedTensorType b, RankedTensorType c,
          RankedTensorType r) -> LogicalResult {
        if (failed(verifySame(*this, "tokens", "A",
                              a.getDimSize(a.getRank() - 2), "C",
                              c.getDimSize(c.getRank() - 2))))
          return failure();
        if (a.getRank() == 2)
          return verifySame(*this, "tokens", "C", c.getDimSize(0), "the result",
                            r.getDimSize(0));
        return success(
            succeeded(verifySame(*this, "experts per rank", "A",
                                 a.getDimSize(0), "B", b.getDimSize(0))) &&
            succeeded(verifySame(*this, "experts per rank", "A",
                                 a.getDimSize(0), "C", c.getDimSize(0))));
      });
}

int64_t MatmulAllToAllOp::getPlannedRows() {
  return expertRows(getA().getType());
}

LogicalResult
MatmulAllToAllOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyExpertGroup(*this, symbolTable,
                           {getResult().getType(), "the result"},
                           {getA().getType(), "A"});
}

//===----------------------------------------------------------------------===//
// ChainMatmulOp
//===----------------------------------------------------------------------===//

LogicalResult ChainMatmulOp::verify() {
  auto factors = getFactors();
  if (factors.size() < 2)
    return emitOpError() << "needs at least 2 factors, got " << factors.size();
  Type elem = cast<RankedTensorType>(factors[0].getType()).getElementType();
  for (auto [i, v] : llvm::enumerate(factors)) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() != 2)
      return emitOpError() << "factor #" << i
                           << " must be a rank-2 tensor, got rank "
                           << type.getRank();
    if (type.getElementType() != elem)
      return emitOpError() << "factor #" << i << " has element type "
                           << type.getElementType() << " but factor #0 has "
                           << elem << "; all factors must share one";
  }
  for (size_t i = 0; i + 1 < factors.size(); ++i) {
    auto lhs = cast<RankedTensorType>(factors[i].getType());
    auto rhs = cast<RankedTensorType>(factors[i + 1].getType());
    if (bothStatic(lhs.getDimSize(1), rhs.getDimSize(0)) &&
        lhs.getDimSize(1) != rhs.getDimSize(0))
      return emitOpError() << "inner dimensions do not match: factor #" << i
                           << " is " << formatShape(lhs.getShape())
                           << " but factor #" << i + 1 << " is "
                           << formatShape(rhs.getShape()) << " (expected "
                           << lhs.getDimSize(1) << " rows)";
  }
  RankedTensorType result = getResult().getType();
  auto first = cast<RankedTensorType>(factors.front().getType());
  auto last = cast<RankedTensorType>(factors.back().getType());
  if (result.getRank() != 2)
    return emitOpError() << "result must be a rank-2 tensor, got rank "
                         << result.getRank();
  if (result.getElementType() != elem)
    return emitOpError() << "result has element type "
                         << result.getElementType() << ", expected " << elem;
  SmallVector<int64_t> expected = {first.getDimSize(0), last.getDimSize(1)};
  for (int d = 0; d < 2; ++d)
    if (bothStatic(result.getDimSize(d), expected[d]) &&
        result.getDimSize(d) != expected[d])
      return emitOpError() << "result is " << formatShape(result.getShape())
                           << ", expected " << formatShape(expected)
                           << " (rows of the first factor x columns of the "
                              "last)";
  return success();
}

//===----------------------------------------------------------------------===//
// Tile-level collectives
//===----------------------------------------------------------------------===//

/// Tensor form: a result, and optionally an `into` destination tensor of
/// the result's type (destination style). Memref form: no result, and a
/// destination memref when `needsInit`.
static LogicalResult verifyCollectiveForm(Operation *op, Value input,
                                          Value init, Value result,
                                          bool needsInit) {
  if (isa<RankedTensorType>(input.getType())) {
    if (!result)
      return op->emitOpError() << "on a tensor must return a tensor result";
    if (init && init.getType() != result.getType())
      return op->emitOpError()
             << "on a tensor with an 'into' destination returns the "
                "destination's type "
             << init.getType() << ", got " << result.getType();
    return success();
  }
  if (result)
    return op->emitOpError() << "on a memref works in place and returns no "
                                "result, got "
                             << result.getType();
  if (needsInit && !init)
    return op->emitOpError() << "on a memref needs an 'into' destination "
                                "memref";
  if (init && !isa<BaseMemRefType>(init.getType()))
    return op->emitOpError()
           << "on a memref needs a memref destination, got " << init.getType();
  if (init && cast<ShapedType>(init.getType()).getElementType() !=
                  cast<ShapedType>(input.getType()).getElementType())
    return op->emitOpError()
           << "destination element type "
           << cast<ShapedType>(init.getType()).getElementType()
           << " differs from the input's "
           << cast<ShapedType>(input.getType()).getElementType();
  return success();
}

/// Output of the collective: the result (tensor form) or the destination
/// (memref form).
static ShapedType outputType(Value init, Value result) {
  return cast<ShapedType>(result ? result.getType() : init.getType());
}

/// Checks that `output` has `input`'s shape except for rows scaled by the
/// group size (`gather`: rows x G, otherwise rows / G).
static LogicalResult verifyRowScaling(Operation *op, ShapedType input,
                                      ShapedType output, int64_t group,
                                      bool gather) {
  if (input.getRank() < 1 || input.getRank() != output.getRank())
    return op->emitOpError() << "input " << input << " and output " << output
                             << " must have the same rank (at least 1)";
  if (input.getElementType() != output.getElementType())
    return op->emitOpError()
           << "output element type " << output.getElementType()
           << " differs from the input's " << input.getElementType();
  for (int64_t d = 1; d < input.getRank(); ++d)
    if (bothStatic(input.getDimSize(d), output.getDimSize(d)) &&
        input.getDimSize(d) != output.getDimSize(d))
      return op->emitOpError()
             << "dimension " << d << " of the output is "
             << output.getDimSize(d) << ", expected the input's "
             << input.getDimSize(d);
  int64_t in = input.getDimSize(0), out = output.getDimSize(0);
  if (ShapedType::isDynamic(group) || !bothStatic(in, out))
    return success();
  if (!gather && in % group != 0)
    return op->emitOpError()
           << "input rows (" << in << ") are not divisible by the group size "
           << group;
  int64_t expected = gather ? in * group : in / group;
  if (out != expected)
    return op->emitOpError()
           << "output has " << out << " rows, expected " << expected << " ("
           << in << (gather ? " x " : " / ") << group << " ranks)";
  return success();
}

/// An exchange's output (all-to-all, shift) has its input's shape and
/// element type.
static LogicalResult verifySameTypeOut(Operation *op, Value inputValue,
                                       Value init, Value result) {
  auto input = cast<ShapedType>(inputValue.getType());
  ShapedType output = outputType(init, result);
  if (input.getShape() != output.getShape() ||
      input.getElementType() != output.getElementType())
    return op->emitOpError()
           << "output " << output
           << " must have the input's shape and element type (" << input
           << ")";
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (failed(
          verifyCollectiveForm(*this, getInput(), Value(), getResult(), false)))
    return failure();
  if (getResult() && getResult().getType() != getInput().getType())
    return emitOpError() << "result type " << getResult().getType()
                         << " differs from the input type "
                         << getInput().getType();
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  return verifyCollectiveForm(*this, getInput(), getInit(), getResult(), true);
}

LogicalResult AllGatherOp::verify() {
  return verifyCollectiveForm(*this, getInput(), getInit(), getResult(), true);
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyCollectiveForm(*this, getInput(), getInit(), getResult(),
                                  true)))
    return failure();
  if (getInit() && getInit() == getInput())
    return emitOpError() << "destination is the input; an all-to-all reads "
                            "every peer's input while it writes, so they "
                            "must be distinct buffers";
  return success();
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> group = verifyGroupSize(*this, symbolTable);
  if (failed(group))
    return failure();
  if (failed(verifySameTypeOut(*this, getInput(), getInit(), getResult())))
    return failure();
  auto input = cast<ShapedType>(getInput().getType());
  if (input.getRank() < 1)
    return emitOpError() << "input must have at least one dimension";
  return verifyTokenBlocks(*this, "input rows", input.getDimSize(0), *group);
}

LogicalResult ShiftOp::verify() {
  if (failed(verifyCollectiveForm(*this, getInput(), getInit(), getResult(),
                                  true)))
    return failure();
  return verifySameTypeOut(*this, getInput(), getInit(), getResult());
}

LogicalResult ShiftOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> group = verifyGroupSize(*this, symbolTable);
  if (failed(group))
    return failure();
  // A shift by a multiple of G is a copy, in place allowed; otherwise
  // every rank reads its peer's input while its own is being written.
  bool copy = !ShapedType::isDynamic(*group) && getOffset() % *group == 0;
  if (getInit() && getInit() == getInput() && !copy)
    return emitOpError() << "destination is the input; a shift by "
                         << getOffset()
                         << " sends the input to another rank while it "
                            "receives, so they must be distinct buffers";
  return success();
}

LogicalResult
AllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyGroup(*this, getGridAttr(), getGridAxes(), symbolTable);
}

/// Symbol checks of reduce-scatter and all-gather: the group, then the
/// output's rows scaled by its size.
template <typename OpTy>
static LogicalResult
verifyScalingGroup(OpTy op, SymbolTableCollection &symbolTable, bool gather) {
  FailureOr<int64_t> group = verifyGroupSize(op, symbolTable);
  if (failed(group))
    return failure();
  return verifyRowScaling(op, cast<ShapedType>(op.getInput().getType()),
                          outputType(op.getInit(), op.getResult()), *group,
                          gather);
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyScalingGroup(*this, symbolTable, false);
}

LogicalResult
AllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyScalingGroup(*this, symbolTable, true);
}

using EffectList =
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>;

/// Memref collectives read their input and write their output (the input
/// itself for an in-place all-reduce, which has no init); tensor
/// collectives have no effects.
template <typename OpTy>
static void addCollectiveEffects(OpTy op, EffectList &effects) {
  if (!isa<BaseMemRefType>(op.getInput().getType()))
    return;
  OpOperand *written = &op.getInputMutable();
  if constexpr (!std::is_same_v<OpTy, AllReduceOp>)
    if (op.getInit())
      written = &op.getInitMutable()[0];
  effects.emplace_back(MemoryEffects::Read::get(), &op.getInputMutable(),
                       SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(), written,
                       SideEffects::DefaultResource::get());
}

void AllReduceOp::getEffects(EffectList &effects) {
  addCollectiveEffects(*this, effects);
}
void ReduceScatterOp::getEffects(EffectList &effects) {
  addCollectiveEffects(*this, effects);
}
void AllGatherOp::getEffects(EffectList &effects) {
  addCollectiveEffects(*this, effects);
}
void AllToAllOp::getEffects(EffectList &effects) {
  addCollectiveEffects(*this, effects);
}
void ShiftOp::getEffects(EffectList &effects) {
  addCollectiveEffects(*this, effects);
}

//===----------------------------------------------------------------------===//
// Signals, signal, wait
//===----------------------------------------------------------------------===//

void SignalsOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Allocate::get(),
                       cast<OpResult>(getSignals()), SignalResource::get());
}

// A signal publishes every earlier write of its stream, so it reads all
// memory; a wait makes other streams' writes visible, so it writes all
// memory. Both touch the flags. This keeps memory ops from being moved
// across them.
void SignalOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Write::get(), &getSignalsMutable(),
                       SignalResource::get());
  effects.emplace_back(MemoryEffects::Read::get(),
                       SideEffects::DefaultResource::get());
}

void WaitOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), &getSignalsMutable(),
                       SignalResource::get());
  effects.emplace_back(MemoryEffects::Write::get(),
                       SideEffects::DefaultResource::get());
}

/// Checks the flag index and that the op sits in a stream; returns the
/// stream (null on failure).
static StreamOp verifyFlagOp(Operation *op, Value signals, uint64_t index) {
  int64_t count = cast<SignalsType>(signals.getType()).getCount();
  if (index >= static_cast<uint64_t>(count)) {
    op->emitOpError() << "flag index " << index << " is out of range for "
                      << signals.getType() << " (valid: 0.." << count - 1
                      << ")";
    return {};
  }
  auto stream = op->getParentOfType<StreamOp>();
  if (!stream)
    op->emitOpError() << "must be inside an 'overlap.stream'";
  return stream;
}

LogicalResult SignalOp::verify() {
  return success(verifyFlagOp(*this, getSignals(), getIndex()) != nullptr);
}

LogicalResult WaitOp::verify() {
  StreamOp stream = verifyFlagOp(*this, getSignals(), getIndex());
  if (!stream)
    return failure();
  auto concurrent = stream->getParentOfType<ConcurrentOp>();
  bool released = false;
  for (auto other : concurrent.getBody().getOps<StreamOp>()) {
    if (other == stream)
      continue;
    other.walk([&](SignalOp signal) {
      if (signal.getSignals() == getSignals() &&
          signal.getIndex() == getIndex())
        released = true;
    });
  }
  if (!released)
    return emitOpError() << "waits on flag " << getIndex()
                         << " but no other stream of the enclosing "
                            "'overlap.concurrent' signals that flag; the "
                            "wait would never be released";
  return success();
}

//===----------------------------------------------------------------------===//
// Concurrent, stream
//===----------------------------------------------------------------------===//

LogicalResult ConcurrentOp::verify() {
  llvm::StringSet<> names;
  unsigned streams = 0;
  for (Operation &op : getBody().front()) {
    auto stream = dyn_cast<StreamOp>(op);
    if (!stream)
      return op.emitOpError()
             << "is not allowed directly inside 'overlap.concurrent'; only "
                "'overlap.stream' regions may appear there";
    if (!names.insert(stream.getName()).second)
      return stream.emitOpError() << "name '" << stream.getName()
                                  << "' is used by another stream of the "
                                     "same 'overlap.concurrent'";
    ++streams;
  }
  if (streams == 0)
    return emitOpError() << "needs at least one 'overlap.stream'";
  return success();
}

LogicalResult StreamOp::verify() {
  if (getName().empty())
    return emitOpError() << "needs a non-empty name";
  return success();
}

static ParseResult parseStreamName(OpAsmParser &parser, StringAttr &name) {
  std::string text;
  if (parser.parseKeywordOrString(&text))
    return failure();
  name = parser.getBuilder().getStringAttr(text);
  return success();
}

static void printStreamName(OpAsmPrinter &printer, Operation *,
                            StringAttr name) {
  printer.printKeywordOrString(name.getValue());
}

#define GET_OP_CLASSES
#include "overlap/Dialect/Overlap/IR/OverlapOps.cpp.inc"

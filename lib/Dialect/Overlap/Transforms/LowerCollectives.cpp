//===- LowerCollectives.cpp - Unfused shard collectives, unsplit -*- C++
//-*-===//
//
// overlap-lower-collectives: every shard collective on tensors that
// overlap-raise left alone becomes one Overlap tile collective over the
// whole tensor (the runtime then runs it as one call), with transposes
// around it when it works along another axis than rows, and a missed remark
// that says it was not overlapped and why.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"
#include "overlap/Dialect/Overlap/Transforms/Remarks.h"

#include "Raise.h"
#include "TensorBuilders.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPLOWERCOLLECTIVES
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;
using namespace mlir::overlap;

namespace {

constexpr llvm::StringLiteral kPass = "overlap-lower-collectives";

std::optional<ReductionKind> reductionOf(shard::ReductionKind kind) {
  switch (kind) {
  case shard::ReductionKind::Sum:
    return ReductionKind::Sum;
  case shard::ReductionKind::Max:
    return ReductionKind::Max;
  case shard::ReductionKind::Min:
    return ReductionKind::Min;
  case shard::ReductionKind::Product:
    return ReductionKind::Prod;
  case shard::ReductionKind::Average:
    return ReductionKind::Avg;
  default:
    return std::nullopt;
  }
}

/// The collective's name as remarks and errors say it.
StringRef collectiveName(Operation *op) {
  return llvm::TypeSwitch<Operation *, StringRef>(op)
      .Case([](shard::AllReduceOp) { return "all-reduce"; })
      .Case([](shard::AllGatherOp) { return "all-gather"; })
      .Case([](shard::ReduceScatterOp) { return "reduce-scatter"; })
      .Case([](shard::AllToAllOp) { return "all-to-all"; })
      .Case([](shard::AllSliceOp) { return "all-slice"; })
      .Default([](Operation *) { return "collective"; });
}

} // namespace

bool mlir::overlap::isRuntimeElementType(Type type) {
  return type.isF32() || type.isF16() || type.isBF16() || type.isF64() ||
         type.isSignlessInteger(8) || type.isSignlessInteger(16) ||
         type.isSignlessInteger(32) || type.isSignlessInteger(64);
}

bool mlir::overlap::isBooleanCollective(Operation *op) {
  if (!isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
           shard::AllToAllOp>(op))
    return false;
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  return in && out && in.getElementType().isSignlessInteger(1) &&
         out.getElementType().isSignlessInteger(1);
}

/// `v` (an i1 or i8 tensor) as the other, of the same sizes.
static Value castBooleans(OpBuilder &b, Location loc, Value v, Type elem) {
  return convertElementsInto(
      b, loc, v,
      tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, v), elem));
}

/// `v` itself when it lies in one contiguous block of memory once
/// bufferized, else a copy of it that does (a collective is one call on one
/// contiguous buffer). Only a tensor.extract_slice can be strided here: it
/// is one block when the dims after its last partial dim are whole, the
/// dims before it are 1 wide and that dim has unit stride; any other
/// (`v[:, :2]`, `v[0:2, 0:3]` of a 4x8 tensor) is copied.
static Value contiguous(OpBuilder &b, Location loc, Value v) {
  auto slice = v.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice)
    return v;
  auto source = cast<RankedTensorType>(slice.getSourceType());
  auto sizeOf = [&](int64_t d) {
    return getConstantIntValue(slice.getMixedSizes()[d]);
  };
  auto unitStride = [&](int64_t d) {
    std::optional<int64_t> stride =
        getConstantIntValue(slice.getMixedStrides()[d]);
    return stride && *stride == 1;
  };
  int64_t p = source.getRank() - 1;
  for (; p >= 0; --p) {
    std::optional<int64_t> size = sizeOf(p);
    if (!(size && !source.isDynamicDim(p) && *size == source.getDimSize(p) &&
          unitStride(p)))
      break;
  }
  bool dense = p < 0 || unitStride(p) || sizeOf(p) == 1;
  for (int64_t d = 0; d < p && dense; ++d)
    dense = sizeOf(d) == 1;
  if (dense)
    return v;
  Value empty = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, v), getElementTypeOrSelf(v));
  return linalg::CopyOp::create(b, loc, v, empty).getResult(0);
}

Operation *mlir::overlap::collectiveOnBytes(OpBuilder &b, Operation *op) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Location loc = op->getLoc();
  Value input = castBooleans(b, loc, op->getOperand(0), b.getI8Type());
  Operation *bytes = b.clone(*op);
  bytes->setOperand(0, input);
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  bytes->getResult(0).setType(resultType.clone(b.getI8Type()));
  b.setInsertionPointAfter(bytes);
  op->getResult(0).replaceAllUsesWith(
      castBooleans(b, loc, bytes->getResult(0), b.getI1Type()));
  op->erase();
  return bytes;
}

std::string mlir::overlap::whyNotLowered(Operation *op,
                                         SymbolTableCollection &symbols) {
  if (isExpandedCollective(op)) {
    std::string why = whyNotExpanded(op, symbols);
    return why.empty() ? "it is written with other collectives by "
                         "overlap-expand-collectives, which did not run "
                         "before"
                       : why;
  }
  if (!isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
           shard::AllToAllOp, shard::AllSliceOp>(op))
    return "Overlap lowers all_reduce, all_gather, reduce_scatter, "
           "all_to_all, all_slice, and broadcast, gather, scatter, reduce, "
           "shift and update_halo written with them; not '" +
           op->getName().getStringRef().str() + "'";
  auto input = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!input || !result)
    return "it is not on ranked tensors";
  // i1 moves as bytes (collectiveOnBytes).
  if (!isa<shard::AllSliceOp>(op) && !isBooleanCollective(op)) {
    for (Type type : {input.getElementType(), result.getElementType()})
      if (!isRuntimeElementType(type))
        return "its element type " + remarkText(type) +
               " is not one the runtime's collectives take (f32, f16, bf16, "
               "f64, i8, i16, i32, i64; i1 when both the input and the "
               "result are i1)";
  }
  int64_t group = groupSizeOf(op, symbols);
  if (auto allReduce = dyn_cast<shard::AllReduceOp>(op)) {
    if (!reductionOf(allReduce.getReduction()))
      return "the reduction '" +
             shard::stringifyReductionKind(allReduce.getReduction()).str() +
             "' is not one the runtime has (sum, max, min, product, average)";
  }
  if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op)) {
    if (!reductionOf(scatter.getReduction()))
      return "the reduction '" +
             shard::stringifyReductionKind(scatter.getReduction()).str() +
             "' is not one the runtime has (sum, max, min, product, average)";
    if (input.getElementType() != result.getElementType())
      return "the reduce-scatter changes the element type";
  }
  if (isa<shard::AllGatherOp, shard::AllToAllOp>(op) &&
      input.getElementType() != result.getElementType())
    return "the collective changes the element type";
  // The dimension that is cut into one block per group rank.
  std::optional<int64_t> cut;
  if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op))
    cut = scatter.getScatterAxis().getSExtValue();
  else if (auto exchange = dyn_cast<shard::AllToAllOp>(op))
    cut = exchange.getSplitAxis().getSExtValue();
  else if (auto slice = dyn_cast<shard::AllSliceOp>(op))
    cut = slice.getSliceAxis().getSExtValue();
  // A dynamic size is checked where it is known, at run time.
  if (cut && (*cut < 0 || *cut >= input.getRank() ||
              (!input.isDynamicDim(*cut) && !ShapedType::isDynamic(group) &&
               input.getDimSize(*cut) % group != 0)))
    return "dimension " + std::to_string(*cut) + " (" +
           (*cut >= 0 && *cut < input.getRank()
                ? std::to_string(input.getDimSize(*cut))
                : std::string("out of range")) +
           ") is not divisible by the group size " + std::to_string(group) +
           ": every rank must get an equal block (pad it to a multiple of "
           "the group size)";
  return "";
}

namespace {

/// `size` times `k` (or divided by it), folded when both are static.
OpFoldResult scaleSize(OpBuilder &b, Location loc, OpFoldResult size,
                       OpFoldResult k, bool divide) {
  std::optional<int64_t> c = getConstantIntValue(size),
                         kc = getConstantIntValue(k);
  if (c && kc)
    return b.getIndexAttr(divide ? *c / *kc : *c * *kc);
  Value v = getValueOrCreateConstantIndexOp(b, loc, size);
  Value kv = getValueOrCreateConstantIndexOp(b, loc, k);
  return divide ? arith::DivUIOp::create(b, loc, v, kv).getResult()
                : arith::MulIOp::create(b, loc, v, kv).getResult();
}

/// The size of `op`'s group: a constant, or on a grid with dynamic
/// extents the product of the group axes' extents (shard.grid_shape,
/// which the runtime lowering gives from the number of ranks).
OpFoldResult groupSizeFold(OpBuilder &b, Location loc, Operation *op,
                           SymbolTableCollection &symbols) {
  int64_t group = groupSizeOf(op, symbols);
  if (!ShapedType::isDynamic(group))
    return b.getIndexAttr(group);
  auto gridAttr = op->getAttrOfType<FlatSymbolRefAttr>("grid");
  ArrayRef<int16_t> axes =
      op->getAttrOfType<DenseI16ArrayAttr>("grid_axes").asArrayRef();
  SmallVector<Type> types(axes.size(), b.getIndexType());
  auto shape =
      shard::GridShapeOp::create(b, loc, types, gridAttr.getValue(), axes);
  Value size = arith::ConstantIndexOp::create(b, loc, 1);
  for (Value extent : shape->getResults())
    size = arith::MulIOp::create(b, loc, size, extent);
  return size;
}

/// A dynamic `size` (or group) that is cut into `group` equal blocks: a
/// run-time check that it divides (the static case is checked by
/// whyNotLowered).
void assertDivisible(OpBuilder &b, Location loc, OpFoldResult size,
                     OpFoldResult group, StringRef what) {
  std::optional<int64_t> groupConst = getConstantIntValue(group);
  if ((getConstantIntValue(size) && groupConst) ||
      (groupConst && *groupConst == 1))
    return;
  Value v = getValueOrCreateConstantIndexOp(b, loc, size);
  Value rem = arith::RemUIOp::create(
      b, loc, v, getValueOrCreateConstantIndexOp(b, loc, group));
  Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem,
                                   arith::ConstantIndexOp::create(b, loc, 0));
  cf::AssertOp::create(
      b, loc, ok,
      (what +
       ": the dimension cut into one block per rank is not divisible "
       "by the group size" +
       (groupConst ? " " + std::to_string(*groupConst) : std::string()))
          .str());
}

/// A tile collective of `rows` into a new tensor of `sizes`: without an
/// init when the sizes are static (bufferization allocates the result),
/// else into a tensor.empty of those sizes.
template <typename OpT, typename... Extra>
Value collectiveInto(OpBuilder &b, Location loc, Value rows,
                     ArrayRef<OpFoldResult> sizes, FlatSymbolRefAttr grid,
                     DenseI16ArrayAttr axes, Extra... extra) {
  Type elem = getElementTypeOrSelf(rows.getType());
  auto init = tensor::EmptyOp::create(b, loc, sizes, elem);
  if (init.getType().hasStaticShape()) {
    Type type = init.getType();
    init->erase();
    return OpT::create(b, loc, type, rows, Value(), grid, axes, extra...)
        .getResult();
  }
  return OpT::create(b, loc, init.getType(), rows, init.getResult(), grid, axes,
                     extra...)
      .getResult();
}

/// Rewrites one collective; the caller checked whyNotLowered. Sizes that
/// are dynamic are read from the input at run time (tensor.dim).
Value lowerOne(OpBuilder &b, Operation *op, SymbolTableCollection &symbols) {
  Location loc = op->getLoc();
  auto inputType = cast<RankedTensorType>(op->getOperand(0).getType());
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = inputType.getRank();
  auto gridAttr = op->getAttrOfType<FlatSymbolRefAttr>("grid");
  auto axesAttr = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
  OpFoldResult group = groupSizeFold(b, loc, op, symbols);
  std::string what = (op->getName().getStringRef() + " at ").str();
  {
    llvm::raw_string_ostream os(what);
    os << loc;
  }
  // The op's own result type where it is more static than what was built
  // (a tensor<5x?xf32> result that is 5x24 here), or less.
  auto asResult = [&](Value v) {
    return v.getType() == resultType
               ? v
               : tensor::CastOp::create(b, loc, resultType, v).getResult();
  };

  if (auto allReduce = dyn_cast<shard::AllReduceOp>(op)) {
    // Converted first, so that the reduction runs in the result type.
    Value input = contiguous(b, loc, allReduce.getInput());
    if (getElementTypeOrSelf(input.getType()) != resultType.getElementType())
      input = convertElementsInto(
          b, loc, input,
          tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, input),
                                  resultType.getElementType()));
    return asResult(
        AllReduceOp::create(
            b, loc, input.getType(), input, gridAttr, axesAttr,
            ReductionKindAttr::get(b.getContext(),
                                   *reductionOf(allReduce.getReduction())))
            .getResult());
  }
  // A collective on rows of `input` with dim `axis` moved to the front,
  // `group` times the rows out per row in (a gather) or 1/group (a
  // scatter); its result is moved back.
  auto alongRows = [&](Value input, int64_t axis, bool scatter, auto build) {
    SmallVector<int64_t> perm = axisFirst(axis, rank);
    Value rows = transposeTensor(b, loc, contiguous(b, loc, input), perm);
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, rows);
    if (scatter)
      assertDivisible(b, loc, sizes[0], group, what);
    sizes[0] = scaleSize(b, loc, sizes[0], group, scatter);
    return asResult(
        transposeTensor(b, loc, build(rows, sizes), invertPermutation(perm)));
  };
  if (auto gather = dyn_cast<shard::AllGatherOp>(op))
    return alongRows(gather.getInput(), gather.getGatherAxis().getSExtValue(),
                     /*scatter=*/false,
                     [&](Value rows, ArrayRef<OpFoldResult> sizes) {
                       return collectiveInto<AllGatherOp>(b, loc, rows, sizes,
                                                          gridAttr, axesAttr);
                     });
  if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op))
    return alongRows(
        scatter.getInput(), scatter.getScatterAxis().getSExtValue(),
        /*scatter=*/true, [&](Value rows, ArrayRef<OpFoldResult> sizes) {
          return collectiveInto<ReduceScatterOp>(
              b, loc, rows, sizes, gridAttr, axesAttr,
              ReductionKindAttr::get(b.getContext(),
                                     *reductionOf(scatter.getReduction())));
        });
  if (auto exchange = dyn_cast<shard::AllToAllOp>(op)) {
    int64_t split = exchange.getSplitAxis().getSExtValue();
    int64_t concat = exchange.getConcatAxis().getSExtValue();
    // Block j of the split axis goes to group rank j; what arrives from
    // rank j is block j of the exchanged rows.
    SmallVector<int64_t> perm = axisFirst(split, rank);
    Value rows = transposeTensor(b, loc, exchange.getInput(), perm);
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, rows);
    assertDivisible(b, loc, sizes[0], group, what);
    Value received =
        collectiveInto<AllToAllOp>(b, loc, rows, sizes, gridAttr, axesAttr);
    // [G * s, rest...] -> [G, s, rest...]: dim 0 is the sender, dim 1 the
    // split axis' local part, dims 2.. the other input dims in order.
    SmallVector<OpFoldResult> blocks = {
        group, scaleSize(b, loc, sizes[0], group, /*divide=*/true)};
    llvm::append_range(blocks, ArrayRef<OpFoldResult>(sizes).drop_front());
    SmallVector<ReassociationIndices> split2 = {{0, 1}};
    for (int64_t d = 2; d <= rank; ++d)
      split2.push_back({d});
    SmallVector<int64_t> blockShape = decomposeMixedValues(blocks).first;
    // A run-time group size splits a static dimension into dynamic ones,
    // which tensor.expand_shape takes from a dynamic one only.
    auto receivedType = cast<RankedTensorType>(received.getType());
    if ((!getConstantIntValue(blocks[0]) || !getConstantIntValue(blocks[1])) &&
        !receivedType.isDynamicDim(0)) {
      SmallVector<int64_t> shape(receivedType.getShape());
      shape[0] = ShapedType::kDynamic;
      received =
          tensor::CastOp::create(b, loc, receivedType.clone(shape), received);
    }
    Value blocked = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(blockShape, resultType.getElementType()),
        received, split2, blocks);
    // Input order again, with the sender just before the concat axis, so
    // that collapsing the two concatenates the blocks in rank order.
    SmallVector<int64_t> order;
    for (int64_t d = 0, other = 2; d < rank; ++d) {
      if (d == concat)
        order.push_back(0);
      order.push_back(d == split ? 1 : other++);
    }
    Value laid = transposeTensor(b, loc, blocked, order);
    SmallVector<ReassociationIndices> merge;
    for (int64_t d = 0, pos = 0; d < rank; ++d) {
      if (d == concat) {
        merge.push_back({pos, pos + 1});
        pos += 2;
      } else {
        merge.push_back({pos++});
      }
    }
    return asResult(tensor::CollapseShapeOp::create(b, loc, laid, merge));
  }
  auto slice = cast<shard::AllSliceOp>(op);
  auto grid = symbols.lookupNearestSymbolFrom<shard::GridOp>(op, gridAttr);
  Value groupRank = groupRankOf(b, loc, grid, axesAttr.asArrayRef());
  int64_t axis = slice.getSliceAxis().getSExtValue();
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(b, loc, slice.getInput());
  assertDivisible(b, loc, sizes[axis], group, what);
  sizes[axis] = scaleSize(b, loc, sizes[axis], group, /*divide=*/true);
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
      strides(rank, b.getIndexAttr(1));
  offsets[axis] = arith::MulIOp::create(
                      b, loc, groupRank,
                      getValueOrCreateConstantIndexOp(b, loc, sizes[axis]))
                      .getResult();
  return asResult(tensor::ExtractSliceOp::create(b, loc, slice.getInput(),
                                                 offsets, sizes, strides));
}

struct OverlapLowerCollectivesPass
    : public mlir::overlap::impl::OverlapLowerCollectivesBase<
          OverlapLowerCollectivesPass> {
  void runOnOperation() override {
    SymbolTableCollection symbols;
    OpBuilder b(&getContext());
    SmallVector<Operation *> collectives;
    getOperation().walk([&](Operation *op) {
      if (isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
              shard::AllToAllOp, shard::AllSliceOp>(op) &&
          isa<RankedTensorType>(op->getResult(0).getType()))
        collectives.push_back(op);
    });
    for (Operation *op : collectives) {
      if (!whyNotLowered(op, symbols).empty())
        continue; // overlap-check-collectives says why
      // Here, not before overlap-raise, which moves the conversions of an
      // all_gather's elements across it (a bool all_gather from JAX).
      if (isBooleanCollective(op))
        op = collectiveOnBytes(b, op);
      b.setInsertionPoint(op);
      if (!isa<shard::AllSliceOp>(op)) {
        std::string why = whyNotRaised(op);
        if (why.empty())
          why = "overlap-raise did not run before it";
        remarkMissed(op, "not-overlapped", kPass,
                     "lowered as one unsplit " + collectiveName(op) +
                         ", not overlapped: " + why);
      }
      Value replacement = lowerOne(b, op, symbols);
      op->getResult(0).replaceAllUsesWith(replacement);
      op->erase();
    }
  }
};

} // namespace

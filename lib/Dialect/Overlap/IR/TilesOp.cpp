//===- TilesOp.cpp - Disjoint slices of a tensor ------------*- C++ -*-===//
//
// `overlap.tiles` and its terminator: builder, assembly format and verifier.
// The slices are kept as two flat arrays (tile-major, one entry per
// dimension of the destination) so that hundreds of tiles cost two
// attributes, not one per tile.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::overlap;

/// The type of a slice of `dest`'s elements with `sizes`.
static RankedTensorType sliceType(RankedTensorType dest,
                                  ArrayRef<int64_t> sizes) {
  return RankedTensorType::get(sizes, dest.getElementType());
}

void TilesOp::build(OpBuilder &builder, OperationState &state, Value dest,
                    ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes) {
  auto destType = cast<RankedTensorType>(dest.getType());
  state.addOperands(dest);
  state.addAttribute(getStaticOffsetsAttrName(state.name),
                     builder.getDenseI64ArrayAttr(offsets));
  state.addAttribute(getStaticSizesAttrName(state.name),
                     builder.getDenseI64ArrayAttr(sizes));
  state.addTypes(destType);
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  int64_t rank = destType.getRank();
  for (size_t i = 0; rank > 0 && i + rank <= sizes.size(); i += rank)
    block->addArgument(sliceType(destType, sizes.slice(i, rank)),
                       state.location);
}

void TilesOp::build(OpBuilder &builder, OperationState &state, Value dest,
                    ArrayRef<OpFoldResult> offsets, ArrayRef<int64_t> sizes) {
  SmallVector<int64_t> staticOffsets;
  SmallVector<Value> dynamicOffsets;
  dispatchIndexOpFoldResults(offsets, dynamicOffsets, staticOffsets);
  build(builder, state, dest, staticOffsets, sizes);
  state.addOperands(dynamicOffsets);
}

unsigned TilesOp::getNumTiles() { return getBodyBlock().getNumArguments(); }

bool TilesOp::hasStaticOffsets(unsigned i) {
  return llvm::none_of(getTileOffsets(i), ShapedType::isDynamic);
}

SmallVector<OpFoldResult> TilesOp::getMixedTileOffsets(unsigned i) {
  int64_t rank = getDest().getType().getRank();
  // The dynamic operands are in the order of the kDynamic entries.
  size_t before = llvm::count_if(getStaticOffsets().take_front(i * rank),
                                 ShapedType::isDynamic);
  Builder b(getContext());
  SmallVector<OpFoldResult> mixed;
  for (int64_t offset : getTileOffsets(i))
    mixed.push_back(ShapedType::isDynamic(offset)
                        ? OpFoldResult(getOffsets()[before++])
                        : OpFoldResult(b.getIndexAttr(offset)));
  return mixed;
}

ArrayRef<int64_t> TilesOp::getTileOffsets(unsigned i) {
  int64_t rank = getDest().getType().getRank();
  return getStaticOffsets().slice(i * rank, rank);
}

ArrayRef<int64_t> TilesOp::getTileSizes(unsigned i) {
  int64_t rank = getDest().getType().getRank();
  return getStaticSizes().slice(i * rank, rank);
}

YieldOp TilesOp::getYield() {
  return cast<YieldOp>(getBodyBlock().getTerminator());
}

//===----------------------------------------------------------------------===//
// Assembly: %r = overlap.tiles %dest : type (%t0 = [offsets] [sizes], ...)
//           { body } attributes {...}
//===----------------------------------------------------------------------===//

ParseResult TilesOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::UnresolvedOperand dest;
  RankedTensorType destType;
  if (parser.parseOperand(dest) || parser.parseColonType(destType) ||
      parser.resolveOperand(dest, destType, result.operands))
    return failure();
  SmallVector<OpAsmParser::Argument> args;
  SmallVector<int64_t> offsets, sizes;
  SmallVector<OpAsmParser::UnresolvedOperand> dynamicOffsets;
  // An offset is an integer or an index value (ShapedType::kDynamic).
  auto parseOffsets = [&](SmallVectorImpl<int64_t> &out) {
    return parser.parseCommaSeparatedList(
        OpAsmParser::Delimiter::Square, [&]() -> ParseResult {
          OpAsmParser::UnresolvedOperand operand;
          OptionalParseResult dynamic = parser.parseOptionalOperand(operand);
          if (dynamic.has_value()) {
            if (failed(*dynamic))
              return failure();
            dynamicOffsets.push_back(operand);
            out.push_back(ShapedType::kDynamic);
            return success();
          }
          int64_t value;
          if (parser.parseInteger(value))
            return failure();
          out.push_back(value);
          return success();
        });
  };
  auto parseIntegers = [&](SmallVectorImpl<int64_t> &out) {
    return parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square,
                                          [&]() -> ParseResult {
                                            int64_t value;
                                            if (parser.parseInteger(value))
                                              return failure();
                                            out.push_back(value);
                                            return success();
                                          });
  };
  auto parseTile = [&]() -> ParseResult {
    OpAsmParser::Argument arg;
    SmallVector<int64_t> tileOffsets, tileSizes;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseArgument(arg) || parser.parseEqual() ||
        parseOffsets(tileOffsets) || parseIntegers(tileSizes))
      return failure();
    int64_t rank = destType.getRank();
    if (static_cast<int64_t>(tileOffsets.size()) != rank ||
        static_cast<int64_t>(tileSizes.size()) != rank)
      return parser.emitError(loc)
             << "expected " << rank << " offsets and " << rank
             << " sizes (the rank of " << destType << "), got "
             << tileOffsets.size() << " and " << tileSizes.size();
    if (llvm::any_of(tileSizes, [](int64_t size) { return size < 0; }))
      return parser.emitError(loc) << "slice sizes must not be negative";
    arg.type = sliceType(destType, tileSizes);
    args.push_back(arg);
    llvm::append_range(offsets, tileOffsets);
    llvm::append_range(sizes, tileSizes);
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren, parseTile))
    return failure();
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, args) ||
      parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Builder &builder = parser.getBuilder();
  if (parser.resolveOperands(dynamicOffsets, builder.getIndexType(),
                             result.operands))
    return failure();
  result.addAttribute(getStaticOffsetsAttrName(result.name),
                      builder.getDenseI64ArrayAttr(offsets));
  result.addAttribute(getStaticSizesAttrName(result.name),
                      builder.getDenseI64ArrayAttr(sizes));
  result.addTypes(destType);
  return success();
}

void TilesOp::print(OpAsmPrinter &p) {
  p << ' ' << getDest() << " : " << getDest().getType() << " (";
  auto printIntegers = [&](ArrayRef<int64_t> values) {
    p << '[';
    llvm::interleaveComma(values, p);
    p << ']';
  };
  for (unsigned i = 0, e = getNumTiles(); i < e; ++i) {
    if (i)
      p << ", ";
    p << getBodyBlock().getArgument(i) << " = [";
    llvm::interleaveComma(getMixedTileOffsets(i), p, [&](OpFoldResult offset) {
      if (auto value = dyn_cast<Value>(offset))
        p << value;
      else
        p << getConstantIntValue(offset).value_or(0);
    });
    p << ']';
    p << ' ';
    printIntegers(getTileSizes(i));
  }
  p << ") ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(),
      {getStaticOffsetsAttrName(), getStaticSizesAttrName()});
}

//===----------------------------------------------------------------------===//
// Verifier
//===----------------------------------------------------------------------===//

/// Whether slices `i` and `j` share an element (both with static offsets).
static bool overlaps(TilesOp op, unsigned i, unsigned j) {
  ArrayRef<int64_t> offI = op.getTileOffsets(i), sizeI = op.getTileSizes(i);
  ArrayRef<int64_t> offJ = op.getTileOffsets(j), sizeJ = op.getTileSizes(j);
  for (size_t d = 0; d < offI.size(); ++d)
    if (offI[d] + sizeI[d] <= offJ[d] || offJ[d] + sizeJ[d] <= offI[d])
      return false;
  return true;
}

LogicalResult TilesOp::verify() {
  RankedTensorType destType = getDest().getType();
  if (getResult().getType() != destType)
    return emitOpError() << "result type " << getResult().getType()
                         << " differs from the destination's " << destType;
  if (!destType.hasStaticShape() || destType.getRank() == 0)
    return emitOpError() << "destination " << destType
                         << " must have a static shape of rank 1 or more";
  int64_t rank = destType.getRank();
  size_t numOffsets = getStaticOffsets().size();
  if (numOffsets != getStaticSizes().size() || numOffsets % rank != 0)
    return emitOpError() << "has " << numOffsets << " offsets and "
                         << getStaticSizes().size()
                         << " sizes; expected the same multiple of the rank "
                         << rank;
  unsigned tiles = numOffsets / rank;
  size_t dynamic = llvm::count_if(getStaticOffsets(), ShapedType::isDynamic);
  if (dynamic != getOffsets().size())
    return emitOpError() << "has " << dynamic << " dynamic offsets but "
                         << getOffsets().size() << " offset operands";
  if (getNumTiles() != tiles)
    return emitOpError() << "has " << tiles << " slices but its body takes "
                         << getNumTiles() << " arguments";
  ArrayRef<int64_t> shape = destType.getShape();
  for (unsigned i = 0; i < tiles; ++i) {
    ArrayRef<int64_t> offsets = getTileOffsets(i), sizes = getTileSizes(i);
    for (int64_t d = 0; d < rank; ++d) {
      if (ShapedType::isDynamic(offsets[d])) {
        if (sizes[d] < 0 || sizes[d] > shape[d])
          return emitOpError()
                 << "slice #" << i << " has size " << sizes[d]
                 << " in dimension " << d << ", outside the destination's [0, "
                 << shape[d] << ")";
        continue;
      }
      if (offsets[d] < 0 || sizes[d] < 0 || offsets[d] > shape[d] - sizes[d])
        return emitOpError()
               << "slice #" << i << " spans [" << offsets[d] << ", "
               << offsets[d] + sizes[d] << ") in dimension " << d
               << ", outside the destination's [0, " << shape[d] << ")";
    }
    Type argType = getBodyBlock().getArgument(i).getType();
    RankedTensorType expected = sliceType(destType, sizes);
    if (argType != expected)
      return emitOpError() << "body argument #" << i << " has type " << argType
                           << ", expected " << expected
                           << " (the slice's shape)";
  }
  for (unsigned i = 0; i < tiles; ++i)
    for (unsigned j = i + 1; j < tiles; ++j)
      if (hasStaticOffsets(i) && hasStaticOffsets(j) && overlaps(*this, i, j))
        return emitOpError() << "slices #" << i << " and #" << j
                             << " overlap; slices must be disjoint";
  Block &body = getBodyBlock();
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError() << "body must end with 'overlap.yield'";
  if (yield.getValues().size() != tiles)
    return yield.emitOpError() << "yields " << yield.getValues().size()
                               << " values for " << tiles << " slices";
  for (auto [i, value] : llvm::enumerate(yield.getValues()))
    if (value.getType() != body.getArgument(i).getType())
      return yield.emitOpError()
             << "value #" << i << " has type " << value.getType()
             << ", expected the slice's " << body.getArgument(i).getType();
  return success();
}

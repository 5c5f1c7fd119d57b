//===- OverlapDialect.cpp - Overlap dialect, attributes, types -*- C++ -*-===//
//
// Registers the dialect and implements the `#overlap.plan` attribute and the
// `!overlap.signals` type.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/IR/OverlapDialect.h"
#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::overlap;

#include "overlap/Dialect/Overlap/IR/OverlapDialect.cpp.inc"
#include "overlap/Dialect/Overlap/IR/OverlapEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "overlap/Dialect/Overlap/IR/OverlapAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "overlap/Dialect/Overlap/IR/OverlapTypes.cpp.inc"

void OverlapDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "overlap/Dialect/Overlap/IR/OverlapOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "overlap/Dialect/Overlap/IR/OverlapAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "overlap/Dialect/Overlap/IR/OverlapTypes.cpp.inc"
      >();
}

LogicalResult OverlapDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  if (attr.getName() == getFusionAttrName()) {
    if (!isa<FusionAttr>(attr.getValue()))
      return op->emitError() << "'" << getFusionAttrName()
                             << "' must be an #overlap.fusion attribute, got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() != getPlanAttrName())
    return op->emitError() << "unknown overlap dialect attribute '"
                           << attr.getName().getValue() << "'";
  if (!isa<PlanAttr>(attr.getValue()))
    return op->emitError() << "'" << getPlanAttrName()
                           << "' must be an #overlap.plan attribute, got "
                           << attr.getValue();
  if (!isFusedMatmul(op))
    return op->emitError()
           << "'" << getPlanAttrName()
           << "' is only meaningful on a fused matmul op "
              "(overlap.matmul_all_reduce, overlap.matmul_reduce_scatter, "
              "overlap.all_gather_matmul, overlap.all_to_all_matmul, "
              "overlap.matmul_all_to_all)";
  // Tile sums and divisibility need the op's shapes and group: the op's own
  // verifiers check them.
  return success();
}

//===----------------------------------------------------------------------===//
// SignalsType
//===----------------------------------------------------------------------===//

LogicalResult
SignalsType::verify(function_ref<InFlightDiagnostic()> emitError,
                    int64_t count) {
  if (count <= 0)
    return emitError() << "!overlap.signals needs at least one flag, got "
                       << count;
  return success();
}

//===----------------------------------------------------------------------===//
// PlanAttr
//===----------------------------------------------------------------------===//

LogicalResult PlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> tiles, StringRef strategy,
                               Bound bound, llvm::APFloat predicted,
                               llvm::APFloat serial, StringRef layout,
                               ArrayRef<int64_t> groups) {
  double predictedUs = predicted.convertToDouble();
  double serialUs = serial.convertToDouble();
  if (tiles.empty())
    return emitError() << "#overlap.plan needs at least one tile";
  int64_t total = 0;
  for (auto [i, rows] : llvm::enumerate(tiles)) {
    if (rows <= 0)
      return emitError() << "#overlap.plan tile #" << i << " has " << rows
                         << " rows; every tile must be positive";
    // getTotalRows() sums them: a sum past int64 is no row count.
    if (__builtin_add_overflow(total, rows, &total))
      return emitError() << "#overlap.plan tiles sum past 2^63 - 1 rows at "
                            "tile #"
                         << i;
  }
  if (strategy.empty())
    return emitError() << "#overlap.plan needs a non-empty strategy";
  if (!groups.empty()) {
    if (layout != "rank-major")
      return emitError() << "#overlap.plan groups are only for layout "
                            "\"rank-major\"";
    int64_t units = 0;
    for (int64_t g : groups) {
      if (g <= 0)
        return emitError() << "#overlap.plan groups must be positive, got "
                           << g;
      units += g;
    }
    if (units != int64_t(tiles.size()))
      return emitError() << "#overlap.plan groups sum to " << units
                         << " tiles, but the plan has " << tiles.size();
  }
  if (layout != "interleaved" && layout != "rank-major")
    return emitError() << "#overlap.plan layout must be \"interleaved\" or "
                          "\"rank-major\", got \""
                       << layout << "\"";
  if (!std::isfinite(predictedUs) || predictedUs < 0)
    return emitError() << "#overlap.plan predicted_us must be a finite, "
                          "non-negative time, got "
                       << predictedUs;
  if (!std::isfinite(serialUs) || serialUs < 0)
    return emitError() << "#overlap.plan serial_us must be a finite, "
                          "non-negative time, got "
                       << serialUs;
  return success();
}

int64_t PlanAttr::getTotalRows() const {
  ArrayRef<int64_t> tiles = getTiles();
  return std::accumulate(tiles.begin(), tiles.end(), int64_t{0});
}

/// Prints a time so that it parses back to the same double and still reads
/// as a decimal number (`1874.0`, `1282.8`).
static void printMicroseconds(AsmPrinter &printer, const llvm::APFloat &value) {
  SmallString<32> text;
  value.toString(text);
  if (!StringRef(text).contains_insensitive('e') &&
      !StringRef(text).contains('.'))
    text.append(".0");
  printer << text;
}

void PlanAttr::print(AsmPrinter &printer) const {
  printer << "<tiles = [";
  llvm::interleaveComma(getTiles(), printer);
  printer << "], strategy = ";
  printer.printString(getStrategy());
  printer << ", bound = " << stringifyBound(getBound()) << ", predicted_us = ";
  printMicroseconds(printer, getPredictedUs());
  printer << ", serial_us = ";
  printMicroseconds(printer, getSerialUs());
  if (isRankMajor()) {
    printer << ", layout = ";
    printer.printString(getLayout());
  }
  if (!getGroups().empty()) {
    printer << ", groups = [";
    llvm::interleaveComma(getGroups(), printer);
    printer << "]";
  }
  printer << ">";
}

Attribute PlanAttr::parse(AsmParser &parser, Type) {
  SmallVector<int64_t> tiles;
  std::string strategy;
  StringRef boundName;
  double predictedUs = 0, serialUs = 0;
  auto parseField = [&](StringRef name) -> ParseResult {
    if (parser.parseKeyword(name) || parser.parseEqual())
      return failure();
    return success();
  };
  llvm::SMLoc boundLoc;
  if (parser.parseLess() || parseField("tiles") ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     [&]() -> ParseResult {
                                       return parser.parseInteger(
                                           tiles.emplace_back());
                                     }) ||
      parser.parseComma() || parseField("strategy") ||
      parser.parseString(&strategy) || parser.parseComma() ||
      parseField("bound") ||
      (boundLoc = parser.getCurrentLocation(), false) ||
      parser.parseKeyword(&boundName) || parser.parseComma() ||
      parseField("predicted_us") || parser.parseFloat(predictedUs) ||
      parser.parseComma() || parseField("serial_us") ||
      parser.parseFloat(serialUs))
    return {};
  std::string layout = "interleaved";
  SmallVector<int64_t> groups;
  while (succeeded(parser.parseOptionalComma())) {
    if (succeeded(parser.parseOptionalKeyword("layout"))) {
      if (parser.parseEqual() || parser.parseString(&layout))
        return {};
      continue;
    }
    if (parseField("groups") ||
        parser.parseCommaSeparatedList(
            AsmParser::Delimiter::Square,
            [&]() { return parser.parseInteger(groups.emplace_back()); }))
      return {};
  }
  if (parser.parseGreater())
    return {};
  std::optional<Bound> bound = symbolizeBound(boundName);
  if (!bound) {
    parser.emitError(boundLoc) << "expected bound 'compute' or 'comm', got '"
                               << boundName << "'";
    return {};
  }
  return PlanAttr::getChecked(
      [&]() { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), tiles, strategy, *bound,
      llvm::APFloat(predictedUs), llvm::APFloat(serialUs), layout, groups);
}

//===- CheckSliceBounds.cpp - Run-time checks of dynamic slices -*- C++ -*-===//
//
// overlap-check-slice-bounds: a cf.assert before every tensor.extract_slice
// and tensor.insert_slice with a dynamic offset, size or stride, and every
// tensor.extract and tensor.insert with a dynamic index (outside linalg
// bodies), that the slice or element lies inside its tensor. A size from the
// inputs past the extent read past both buffers (exit 0), a negative one
// crashed.
//
//===----------------------------------------------------------------------===//

#include "overlap/Dialect/Overlap/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir {
namespace overlap {
#define GEN_PASS_DEF_OVERLAPCHECKSLICEBOUNDS
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"
} // namespace overlap
} // namespace mlir

using namespace mlir;

namespace {

/// " (from argument #i of @f)" when `v` is a function argument, or read
/// from one (a boxed entry scalar: tensor.extract of a 0-d argument),
/// through casts; empty otherwise.
std::string origin(Value v) {
  for (int steps = 0; steps < 8 && v; ++steps) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (!func || arg.getOwner() != &func.getBody().front())
        return "";
      return " (from argument #" + std::to_string(arg.getArgNumber()) +
             " of @" + func.getSymName().str() + ")";
    }
    Operation *def = v.getDefiningOp();
    if (!def)
      return "";
    if (auto extract = dyn_cast<tensor::ExtractOp>(def))
      v = extract.getTensor();
    else if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
                 arith::ExtUIOp, arith::TruncIOp>(def))
      v = def->getOperand(0);
    else
      return "";
  }
  return "";
}

std::string text(OpFoldResult ofr) {
  if (std::optional<int64_t> c = getConstantIntValue(ofr))
    return std::to_string(*c);
  return "?" + origin(cast<Value>(ofr));
}

std::string locText(Location loc) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << loc;
  return s;
}

/// Checks, before `op`, that dimension by dimension [offset, offset +
/// (size - 1) * stride] lies in [0, extent) of `tensor` (nothing for an
/// empty slice), wherever one of them is dynamic.
void checkSlice(OpBuilder &b, Operation *op, Value tensor,
                ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
                ArrayRef<OpFoldResult> strides) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  std::string where =
      op->getName().getStringRef().str() + " at " + locText(loc) + ": ";
  std::string of = isa<tensor::InsertSliceOp, tensor::InsertOp>(op)
                       ? "its destination"
                       : "its source";
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto cmp = [&](arith::CmpIPredicate p, Value l, Value r) -> Value {
    return arith::CmpIOp::create(b, loc, p, l, r);
  };
  for (int64_t d = 0, e = type.getRank(); d < e; ++d) {
    OpFoldResult offset = offsets[d], size = sizes[d], stride = strides[d];
    if (getConstantIntValue(offset) && getConstantIntValue(size) &&
        getConstantIntValue(stride) && !type.isDynamicDim(d))
      continue;
    std::string slice = "dimension " + std::to_string(d) + " (offset " +
                        text(offset) + ", size " + text(size) + ", stride " +
                        text(stride) + ")";
    std::string extentText =
        type.isDynamicDim(d)
            ? std::string("its run-time extent")
            : "its extent " + std::to_string(type.getDimSize(d));
    Value offsetV = getValueOrCreateConstantIndexOp(b, loc, offset);
    Value sizeV = getValueOrCreateConstantIndexOp(b, loc, size);
    Value strideV = getValueOrCreateConstantIndexOp(b, loc, stride);
    Value extent = type.isDynamicDim(d)
                       ? tensor::DimOp::create(b, loc, tensor, d).getResult()
                       : index(type.getDimSize(d));
    Value zero = index(0), one = index(1);
    cf::AssertOp::create(b, loc, cmp(arith::CmpIPredicate::sge, sizeV, zero),
                         where + slice + ": the size is negative");
    cf::AssertOp::create(b, loc, cmp(arith::CmpIPredicate::sge, strideV, one),
                         where + slice + ": the stride is not positive");
    // Empty: nothing is read or written, whatever the offset.
    Value empty = cmp(arith::CmpIPredicate::eq, sizeV, zero);
    Value offsetIn = arith::AndIOp::create(
        b, loc, cmp(arith::CmpIPredicate::sge, offsetV, zero),
        cmp(arith::CmpIPredicate::slt, offsetV, extent));
    // size - 1 <= (extent - 1 - offset) / stride, without overflow for any
    // size once the offset is inside.
    Value room = arith::DivSIOp::create(
        b, loc,
        arith::SubIOp::create(
            b, loc, arith::SubIOp::create(b, loc, extent, one), offsetV),
        strideV);
    Value fits = arith::AndIOp::create(
        b, loc, offsetIn,
        cmp(arith::CmpIPredicate::sle,
            arith::SubIOp::create(b, loc, sizeV, one), room));
    cf::AssertOp::create(b, loc, arith::OrIOp::create(b, loc, empty, fits),
                         where + slice + " reaches outside " + of + " (" +
                             extentText + ")");
  }
}

/// An element at `indices` of `tensor`: checkSlice of a slice of one.
void checkElement(OpBuilder &b, Operation *op, Value tensor,
                  ValueRange indices) {
  SmallVector<OpFoldResult> offsets = getAsOpFoldResult(indices);
  SmallVector<OpFoldResult> ones(indices.size(), b.getIndexAttr(1));
  checkSlice(b, op, tensor, offsets, ones, ones);
}

struct OverlapCheckSliceBoundsPass
    : public mlir::overlap::impl::OverlapCheckSliceBoundsBase<
          OverlapCheckSliceBoundsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> slices;
    getOperation()->walk([&](Operation *op) {
      // An element read or written at dynamic indices is a slice of one;
      // inside a linalg body (a kernel, on a GPU) its indices come from
      // the iteration space, which the op keeps in bounds itself.
      bool element = isa<tensor::ExtractOp, tensor::InsertOp>(op) &&
                     !isa<linalg::LinalgOp>(op->getParentOp());
      if (element || isa<tensor::ExtractSliceOp, tensor::InsertSliceOp>(op))
        slices.push_back(op);
    });
    OpBuilder b(&getContext());
    for (Operation *op : slices) {
      if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op))
        checkSlice(b, op, extract.getSource(), extract.getMixedOffsets(),
                   extract.getMixedSizes(), extract.getMixedStrides());
      else if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
        checkSlice(b, op, insert.getDest(), insert.getMixedOffsets(),
                   insert.getMixedSizes(), insert.getMixedStrides());
      else if (auto read = dyn_cast<tensor::ExtractOp>(op))
        checkElement(b, op, read.getTensor(), read.getIndices());
      else if (auto write = dyn_cast<tensor::InsertOp>(op))
        checkElement(b, op, write.getDest(), write.getIndices());
    }
  }
};

} // namespace

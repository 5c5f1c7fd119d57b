//===- RuntimeCalls.cpp - Which ops become Overlap runtime calls -*- C++
//-*-===//
//
// overlap::lowersToRuntimeCall and the layout questions behind it
// (Layout.h), shared by convert-overlap-to-runtime and
// overlap-linalg-to-gpu.
//
//===----------------------------------------------------------------------===//

#include "Layout.h"

#include "overlap/Conversion/RuntimeCalls.h"
#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::overlap;
using namespace mlir::overlap::runtime_lowering;

namespace mlir {
namespace overlap {
namespace runtime_lowering {

bool isBroadcastBatchMatmul(linalg::BatchMatmulOp op) {
  if (!op.hasUserDefinedMaps())
    return false;
  MLIRContext *ctx = op.getContext();
  AffineExpr bt, m, n, k;
  bindDims(ctx, bt, m, n, k);
  SmallVector<AffineMap> expected = {AffineMap::get(4, 0, {bt, m, k}, ctx),
                                     AffineMap::get(4, 0, {k, n}, ctx),
                                     AffineMap::get(4, 0, {bt, m, n}, ctx)};
  return op.getIndexingMapsArray() == expected;
}

Layout unitInnerStride(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.empty())
    return Layout::No;
  if (ShapedType::isDynamic(strides.back()))
    return Layout::AtRunTime;
  return strides.back() == 1 ? Layout::Yes : Layout::No;
}

Layout contiguous(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  // The identity layout is row-major whatever the sizes.
  if (type.getLayout().isIdentity() ||
      (type.hasStaticShape() &&
       memref::isStaticShapeAndContiguousRowMajor(type)))
    return Layout::Yes;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return Layout::No;
  // Known strides that differ from the row-major ones rule it out (up to
  // the innermost dynamic size, past which they are run-time values).
  int64_t expected = 1;
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    if (type.getDimSize(d) != 1 && !ShapedType::isDynamic(strides[d]) &&
        strides[d] != expected)
      return Layout::No;
    if (type.isDynamicDim(d))
      break;
    expected *= type.getDimSize(d);
  }
  return Layout::AtRunTime;
}

bool hasByteSizedElements(MemRefType type) { return elementBytes(type) > 0; }

int64_t elementBytes(MemRefType type) {
  Type elem = type.getElementType();
  if (!elem.isIntOrFloat())
    return 0;
  // i1 takes one byte, as LLVM (host and NVPTX alike) stores it: a bool
  // buffer of JAX's comparisons is bytes on either side.
  if (elem.isInteger(1))
    return 1;
  unsigned bits = elem.getIntOrFloatBitWidth();
  return bits % 8 == 0 ? bits / 8 : 0;
}

CopyKind classifyCopy(Value src, Value dst) {
  auto srcType = cast<MemRefType>(src.getType());
  auto dstType = cast<MemRefType>(dst.getType());
  if (!hasByteSizedElements(srcType) || !srcType.hasStaticShape() ||
      srcType.getShape() != dstType.getShape() ||
      srcType.getElementType() != dstType.getElementType())
    return CopyKind::None;
  auto is = [](Layout l) { return l == Layout::Yes; };
  // Contiguous to contiguous is one memcpy at any rank, a rank-0 buffer
  // (one element: a scalar constant JAX passes as tensor<f32>) included.
  if (is(contiguous(src)) && is(contiguous(dst)))
    return CopyKind::Memcpy;
  // The pack kernel takes blocks of up to three dimensions.
  if (srcType.getRank() > 3 || srcType.getRank() < 1)
    return CopyKind::None;
  if (is(contiguous(dst)) && is(unitInnerStride(src)))
    return CopyKind::Pack;
  if (is(contiguous(src)) && is(unitInnerStride(dst)))
    return CopyKind::Unpack;
  return CopyKind::None;
}

} // namespace runtime_lowering
} // namespace overlap
} // namespace mlir

namespace mlir {
namespace overlap {
namespace runtime_lowering {

std::optional<uint8_t> memsetByte(linalg::FillOp fill) {
  if (!fill.hasPureBufferSemantics())
    return std::nullopt;
  auto type = dyn_cast<MemRefType>(fill.getOutputs()[0].getType());
  if (!type || !hasByteSizedElements(type) ||
      contiguous(fill.getOutputs()[0]) != Layout::Yes)
    return std::nullopt;
  Attribute value;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&value)))
    return std::nullopt;
  APInt bits;
  if (auto f = dyn_cast<FloatAttr>(value))
    bits = f.getValue().bitcastToAPInt();
  else if (auto i = dyn_cast<IntegerAttr>(value))
    bits = i.getValue();
  else
    return std::nullopt;
  // In memory an element is elementBytes(type) bytes (i1: one, 0 or 1).
  int64_t width = elementBytes(type) * 8;
  bits = bits.getBitWidth() < width ? bits.zext(width) : bits;
  uint8_t first = static_cast<uint8_t>(bits.extractBitsAsZExtValue(8, 0));
  for (int64_t at = 8; at < width; at += 8)
    if (bits.extractBitsAsZExtValue(8, at) != first)
      return std::nullopt;
  return first;
}

} // namespace runtime_lowering
} // namespace overlap
} // namespace mlir

bool mlir::overlap::lowersToRuntimeCall(Operation *op) {
  if (isTileCollective(op) || isa<SignalOp, WaitOp>(op))
    return true;
  // overlap_gemm multiplies f32, f16 and bf16; an integer or f64 matmul
  // stays a linalg op (loops on the host, a kernel on a device).
  auto floats = [](Operation *mm) {
    return llvm::all_of(mm->getOperandTypes(), [](Type t) {
      return isGemmElementType(getElementTypeOrSelf(t));
    });
  };
  if (auto mm = dyn_cast<linalg::MatmulOp>(op))
    return mm.hasPureBufferSemantics() && !mm.hasUserDefinedMaps() &&
           floats(op);
  if (auto bm = dyn_cast<linalg::BatchMatmulOp>(op))
    return bm.hasPureBufferSemantics() && floats(op) &&
           (!bm.hasUserDefinedMaps() || isBroadcastBatchMatmul(bm));
  // Its verifier checks the element types overlap_gemm takes.
  if (auto gemm = dyn_cast<GemmOp>(op))
    return isa<BaseMemRefType>(gemm.getInit().getType());
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return classifyCopy(copy.getSource(), copy.getTarget()) != CopyKind::None;
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return memsetByte(fill).has_value();
  if (auto copy = dyn_cast<linalg::CopyOp>(op))
    return copy.hasPureBufferSemantics() &&
           classifyCopy(copy.getInputs()[0], copy.getOutputs()[0]) !=
               CopyKind::None;
  return false;
}

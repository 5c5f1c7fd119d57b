//===- Layout.h - What a memref's layout allows the runtime -----*- C++ -*-===//
//
// Internal to convert-overlap-to-runtime and overlap::lowersToRuntimeCall:
// what the static layout of a memref says (contiguous, unit inner stride),
// how a copy maps onto the runtime, and the broadcast batched matmul.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_CONVERSION_OVERLAPTORUNTIME_LAYOUT_H
#define OVERLAP_LIB_CONVERSION_OVERLAPTORUNTIME_LAYOUT_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir {
namespace overlap {
namespace runtime_lowering {

/// True for linalg.batch_matmul whose B is one matrix for every batch.
bool isBroadcastBatchMatmul(linalg::BatchMatmulOp op);

/// What the static layout says about a property of a memref: it holds, it
/// does not, or only the run-time strides can tell (a dynamic layout, e.g.
/// a buffer chosen by an scf.if).
enum class Layout { Yes, No, AtRunTime };

/// Whether the innermost stride of `memref` is 1.
Layout unitInnerStride(Value memref);
/// Whether `memref` is row-major contiguous.
Layout contiguous(Value memref);

/// Elements the runtime can move by bytes: integers or floats of whole
/// bytes, and i1 (one byte each); not index or complex, whose size the
/// memref does not say.
bool hasByteSizedElements(MemRefType type);
/// Bytes of one element of `type` in memory (i1: one), 0 when the elements
/// are not whole bytes or not integers or floats.
int64_t elementBytes(MemRefType type);

/// The byte every byte of `fill`'s output takes, when the fill is one
/// overlap_memset: on a buffer whose layout is row-major contiguous, of a
/// constant whose bytes in memory are all equal (0.0, an integer 0 or -1,
/// a boolean).
std::optional<uint8_t> memsetByte(linalg::FillOp fill);

/// How convert-overlap-to-runtime copies `src` to `dst`, if it can:
/// contiguous to contiguous (memcpy), strided with unit inner stride to
/// contiguous (pack) or back (unpack), static shapes of rank 1 to 3.
enum class CopyKind { None, Memcpy, Pack, Unpack };
CopyKind classifyCopy(Value src, Value dst);

} // namespace runtime_lowering
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_LIB_CONVERSION_OVERLAPTORUNTIME_LAYOUT_H

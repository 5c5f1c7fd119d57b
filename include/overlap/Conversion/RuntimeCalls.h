//===- RuntimeCalls.h - Which ops become Overlap runtime calls --*- C++ -*-===//
//
// One answer, shared by convert-overlap-to-runtime (which lowers these ops
// to calls of overlap_runtime.h) and overlap-linalg-to-gpu (which turns the
// other linalg ops into GPU kernels for target=cuda).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CONVERSION_RUNTIMECALLS_H
#define OVERLAP_CONVERSION_RUNTIMECALLS_H

namespace mlir {
class Operation;

namespace overlap {

/// True if convert-overlap-to-runtime lowers `op` (on buffers) to a call of
/// the runtime: a GEMM, a collective, a signal or wait, or a copy it can
/// express as memcpy, pack or unpack. Such an op may still fail to lower
/// with an error (e.g. a matmul of f64); it is never run another way.
bool lowersToRuntimeCall(Operation *op);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_CONVERSION_RUNTIMECALLS_H

//===- ConcurrentOrder.h - What can run beside a collective ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The order analysis of an `overlap.concurrent` region that
// convert-overlap-to-runtime uses to give a GEMM a tile index (and the
// CUDA backend's SM target) only where a collective can run beside it.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_CONVERSION_OVERLAPTORUNTIME_CONCURRENTORDER_H
#define OVERLAP_LIB_CONVERSION_OVERLAPTORUNTIME_CONCURRENTORDER_H

#include "overlap/Dialect/Overlap/IR/OverlapOps.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir {
namespace overlap {

/// The ops of `concurrent`'s streams (and the ops nested in them) that no
/// collective of the region can run beside: those that the streams' order
/// and the region's signal -> wait edges place before or after every
/// collective on another stream. A top-level op of a stream is one node;
/// a node holding a collective is a collective. Signals and waits nested
/// deeper add no edge, which only makes more ops concurrent (a GEMM then
/// keeps its tile index, as before).
DenseSet<Operation *> opsBesideNoCollective(ConcurrentOp concurrent);

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_LIB_CONVERSION_OVERLAPTORUNTIME_CONCURRENTORDER_H

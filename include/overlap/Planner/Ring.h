//===- Ring.h - What a ring collective puts on the wire --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The ring factor as an exact fraction: ringFactor (Profile.h), which scales
// collective curves between group sizes, and ringWireBytes, the integer
// bytes the benchmark's copy-engine stand-in moves, both come from here.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_RING_H
#define OVERLAP_PLANNER_RING_H

#include "overlap/Planner/Profile.h"

#include <cstdint>

namespace overlap {
namespace planner {

/// A ring collective's wire bytes per buffer byte, numerator / denominator:
/// 2(R-1)/R for all-reduce (reduce-scatter then all-gather), (R-1)/R for
/// reduce-scatter and all-gather, 0/1 for one rank (no wire).
struct RingShare {
  int64_t numerator = 0;
  int64_t denominator = 1;
  double value() const { return double(numerator) / double(denominator); }
};

RingShare ringShare(Collective collective, int64_t ranks);

/// Bytes one rank puts on the wire in a ring collective of a buffer of
/// `bytes` (nccl-tests' size) over `ranks` ranks: ringShare x bytes, rounded
/// to the nearest byte (halves up), computed without overflow for any
/// `bytes` whose result fits. Exact for reduce-scatter and all-gather
/// buffers that divide by the group.
int64_t ringWireBytes(Collective collective, int64_t ranks, int64_t bytes);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_RING_H

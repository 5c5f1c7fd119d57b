//===- Ring.cpp - What a ring collective puts on the wire ------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Ring.h"

using namespace overlap::planner;

RingShare overlap::planner::ringShare(Collective collective, int64_t ranks) {
  if (ranks <= 1)
    return {0, 1};
  const int64_t oneWay = ranks - 1;
  return {collective == Collective::AllReduce ? 2 * oneWay : oneWay, ranks};
}

int64_t overlap::planner::ringWireBytes(Collective collective, int64_t ranks,
                                        int64_t bytes) {
  const RingShare s = ringShare(collective, ranks);
  // bytes = q d + r: q n exactly, then the rounded share of r (< d).
  const int64_t q = bytes / s.denominator, r = bytes % s.denominator;
  return q * s.numerator +
         (r * s.numerator + s.denominator / 2) / s.denominator;
}

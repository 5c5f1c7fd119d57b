//===- RankMajorBench.cpp - Rank-major tiles in overlap-bench -------------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/RankMajorBench.h"

#include "overlap/Calibration/Arguments.h"
#include "overlap/Calibration/RankProblem.h"
#include "overlap/Runtime/Numeric.h"

#include <cstring>

using namespace overlap;
using namespace overlap::calibration;

int64_t calibration::rankMajorSlotOf(int64_t group, int64_t me, int64_t q) {
  return ((me - q) % group + group) % group;
}

int64_t calibration::rankMajorStagingRow(const planner::RankMajorLayout &l,
                                         size_t t) {
  return l[t].step * l.blockSize() + l[t].chunkOffset;
}

std::vector<char> calibration::rankOrderSum(overlap_dtype dtype,
                                            const char *staging, int64_t group,
                                            int64_t me, size_t slotElements) {
  const size_t elt = elementBytes(dtype);
  std::vector<char> out(slotElements * elt);
  for (size_t e = 0; e < slotElements; ++e) {
    float acc = 0.0f;
    for (int64_t q = 0; q < group; ++q) {
      size_t slot = size_t(rankMajorSlotOf(group, me, q));
      acc += decodeElement(dtype, staging + (slot * slotElements + e) * elt);
    }
    char *dst = &out[e * elt];
    if (dtype == OVERLAP_F32) {
      std::memcpy(dst, &acc, sizeof(acc));
      continue;
    }
    uint16_t bits = dtype == OVERLAP_BF16 ? runtime::f32ToBf16(acc)
                                          : runtime::f32ToF16(acc);
    std::memcpy(dst, &bits, sizeof(bits));
  }
  return out;
}

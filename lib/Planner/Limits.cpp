//===- Limits.cpp - The values and the work the Planner accepts -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Limits.h"

using namespace llvm;
using namespace overlap::planner;

Error overlap::planner::checkLimit(const Twine &what, int64_t value, int64_t lo,
                                   int64_t hi, const Twine &expected) {
  if (value >= lo && value <= hi)
    return Error::success();
  return createStringError(std::errc::invalid_argument,
                           "%s: expected %s in [%lld, %lld], got %lld",
                           what.str().c_str(), expected.str().c_str(),
                           (long long)lo, (long long)hi, (long long)value);
}

Error overlap::planner::workBoundError(StringRef strategy, const Twine &why,
                                       uint64_t work, StringRef unit,
                                       const Twine &hint) {
  return createStringError(
      std::errc::result_out_of_range,
      "%s: %s needs at least %llu %s, past the planner's work bound of "
      "%llu; %s",
      strategy.str().c_str(), why.str().c_str(), (unsigned long long)work,
      unit.str().c_str(), (unsigned long long)kMaxSearchSteps,
      hint.str().c_str());
}

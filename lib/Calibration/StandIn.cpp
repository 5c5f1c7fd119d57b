//===- StandIn.cpp - The legs that stand in for a network ------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/StandIn.h"

#include "overlap/Planner/Ring.h"
#include "overlap/Support/EnumNames.h"
#include "overlap/Support/Flags.h"

#include <algorithm>

using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;

static const EnumName<Leg> legNames[] = {{Leg::CopyEngine, "copy-engine"},
                                         {Leg::SmCopy, "sm-copy"},
                                         {Leg::Nccl, "nccl"}};

std::optional<Leg> calibration::parseLeg(const std::string &name) {
  return valueOf(legNames, name);
}

const char *calibration::legName(Leg leg) { return nameOf(legNames, leg); }

std::string calibration::badLegMessage(const std::string &given) {
  return "--leg: expected " + flags::listChoices(namesOf(legNames)) +
         ", got '" + given + "'";
}

StandInBytes calibration::standInBytes(Collective coll, int64_t group,
                                       size_t tileBytes) {
  StandInBytes b;
  b.wire = size_t(planner::ringWireBytes(coll, group, int64_t(tileBytes)));
  b.fromTile = std::min(b.wire, tileBytes);
  if (coll == Collective::AllGather || coll == Collective::AllToAll)
    b.local = group > 0 ? tileBytes / size_t(group) : 0;
  return b;
}

int calibration::smCopyCtas(int64_t commSms, int64_t smCount) {
  int64_t ctas = commSms > 0 ? commSms : smCount;
  if (smCount > 0)
    ctas = std::min(ctas, smCount);
  return int(std::max<int64_t>(ctas, 1));
}

unsigned calibration::copyWordBytes(uintptr_t dst, uintptr_t src,
                                    size_t bytes) {
  const uintptr_t all = dst | src | uintptr_t(bytes);
  unsigned word = 16;
  while (word > 1 && all % word)
    word /= 2;
  return word;
}

int calibration::smCopyBlocks(int ctas, size_t bytes, unsigned word) {
  if (bytes == 0 || word == 0)
    return 0;
  const size_t words = bytes / word;
  const size_t needed = (words + kSmCopyThreads - 1) / kSmCopyThreads;
  return int(std::max<size_t>(1, std::min<size_t>(size_t(ctas), needed)));
}

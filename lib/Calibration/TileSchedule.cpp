//===- TileSchedule.cpp - The order a tiled pipeline is enqueued -*- C++
//-*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/TileSchedule.h"

using namespace overlap;
using namespace overlap::calibration;

TileSteps::~TileSteps() = default;

void calibration::enqueueInterleaved(size_t tiles, TileSteps &steps) {
  for (size_t t = 0; t < tiles; ++t) {
    steps.produce(t);
    steps.signal(t);
    steps.wait(t);
    steps.consume(t);
  }
}

bool calibration::collectiveProduces(planner::Collective collective,
                                     planner::AllToAllSide side) {
  return planner::exchangesInput(collective, side);
}

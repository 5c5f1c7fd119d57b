//===- TileSchedule.cpp - The order a tiled pipeline is enqueued --------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/TileSchedule.h"

using namespace overlap;
using namespace overlap::calibration;

TileSteps::~TileSteps() = default;
bool TileSteps::crosses(size_t) const { return true; }
void TileSteps::prepare(size_t) {}
void TileSteps::signalPrepared(size_t) {}
void TileSteps::waitPrepared(size_t) {}
void TileSteps::signalDone() {}
void TileSteps::waitDone() {}
void TileSteps::finish() {}

void calibration::enqueueInterleaved(size_t tiles, TileSteps &steps) {
  enqueueTiles(tiles, TileExtras(), steps);
}

void calibration::enqueueTiles(size_t tiles, const TileExtras &extras,
                               TileSteps &steps) {
  if (extras.prepareAll)
    for (size_t t = 0; t < tiles; ++t) {
      steps.prepare(t);
      steps.signalPrepared(t);
    }
  for (size_t t = 0; t < tiles; ++t) {
    if (extras.prepareAll)
      steps.waitPrepared(t);
    steps.produce(t);
    if (steps.crosses(t)) {
      steps.signal(t);
      steps.wait(t);
    }
    steps.consume(t);
  }
  if (extras.finish) {
    steps.signalDone();
    steps.waitDone();
    steps.finish();
  }
}

bool calibration::collectiveProduces(planner::Collective collective,
                                     planner::AllToAllSide side) {
  return planner::exchangesInput(collective, side);
}

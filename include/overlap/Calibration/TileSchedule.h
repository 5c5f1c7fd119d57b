//===- TileSchedule.h - The order a tiled pipeline is enqueued -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// A GEMM + collective split into tiles runs as a producer stream (the GEMM;
// for all-gather the collective) and a consumer stream (the collective; for
// all-gather the GEMM), tile t's consumer waiting for tile t's producer
// through signal t. The host enqueues the work tile by tile: producer work
// t, signal t, wait t, consumer work t, then tile t + 1. So the consumer's
// first tile is queued before the producer's later tiles (no stream holds
// the host up behind all of the other's work), and every signal is enqueued
// before its wait, which the `event` signal mode requires. Pure C++
// (OverlapCalibration); the benchmark's runner implements the steps.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_TILESCHEDULE_H
#define OVERLAP_CALIBRATION_TILESCHEDULE_H

#include "overlap/Planner/CostModel.h"

#include <cstddef>

namespace overlap {
namespace calibration {

/// What one tile of the pipeline enqueues, step by step.
class TileSteps {
public:
  virtual ~TileSteps();
  /// The producer stream's work of tile t.
  virtual void produce(size_t tile) = 0;
  /// Signal t on the producer stream, after its work of tile t.
  virtual void signal(size_t tile) = 0;
  /// Wait for signal t on the consumer stream.
  virtual void wait(size_t tile) = 0;
  /// The consumer stream's work of tile t.
  virtual void consume(size_t tile) = 0;
};

/// Enqueues `tiles` tiles interleaved: for each tile in order, produce,
/// signal, wait, consume.
void enqueueInterleaved(size_t tiles, TileSteps &steps);

/// Whether the collective produces and the GEMM consumes (all-gather and
/// all-to-all dispatch: the GEMM needs the rows that arrive), rather than
/// the reverse: planner::exchangesInput. `side` is read for all-to-all only.
bool collectiveProduces(
    planner::Collective collective,
    planner::AllToAllSide side = planner::AllToAllSide::Dispatch);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_TILESCHEDULE_H

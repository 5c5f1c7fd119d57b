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
// before its wait, which the `event` signal mode requires.
//
// Two schedules of overlap-decompose + overlap-schedule-streams have more
// than the tiles' pipeline (enqueueTiles, TileExtras):
//   - all-to-all dispatch packs every tile's tokens on the COMPUTE stream
//     before any tile's GEMM (Decompose.cpp's decomposeDispatch), each pack
//     with its own signal, which tile t's exchange waits for on the comm
//     stream;
//   - a rank-major reduce-scatter (DecomposeRankMajor.cpp) ends with the sum
//     of the G partials on the compute stream after the last exchange (one
//     signal on the comm stream after it, one wait before the sum).
// A rank-major tile of the rank's own block has no exchange: it crosses no
// stream (TileSteps::crosses), so it has no signal and no wait, as in the
// compiled program. Pure C++ (OverlapCalibration); the benchmark's runner
// implements the steps.
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

  /// Whether tile t's consumer waits for its producer (signal t, wait t).
  /// Every tile does but a rank-major tile of the rank's own block (no
  /// exchange: its work is on one stream).
  virtual bool crosses(size_t tile) const;
  /// TileExtras::prepareAll: tile t's work before the pipeline on the
  /// stream the compiler puts it (dispatch: the pack of its tokens on the
  /// compute stream), its signal after it, and the producer's wait for
  /// that signal before tile t's producer work.
  virtual void prepare(size_t tile);
  virtual void signalPrepared(size_t tile);
  virtual void waitPrepared(size_t tile);
  /// TileExtras::finish: the consumer stream's signal after its last work,
  /// the producer stream's wait for it, then the producer stream's final
  /// work (rank-major reduce-scatter: the sum of the G partials).
  virtual void signalDone();
  virtual void waitDone();
  virtual void finish();
};

/// What a schedule has besides the tiles' pipeline (see the file comment).
struct TileExtras {
  /// Every tile's prepare and its signal, in tile order, before any tile's
  /// producer work; tile t's producer then waits for its own.
  bool prepareAll = false;
  /// signalDone, waitDone and finish after the last tile.
  bool finish = false;
};

/// Enqueues `tiles` tiles interleaved: for each tile in order, produce,
/// signal, wait, consume.
void enqueueInterleaved(size_t tiles, TileSteps &steps);

/// Enqueues `tiles` tiles with `extras`: with prepareAll, prepare t and
/// signalPrepared t for every tile first; then for each tile in order
/// (waitPrepared t with prepareAll), produce t and, when the tile crosses,
/// signal t, wait t; consume t; with finish, signalDone, waitDone, finish.
/// Without extras and with every tile crossing it is enqueueInterleaved.
void enqueueTiles(size_t tiles, const TileExtras &extras, TileSteps &steps);

/// Whether the collective produces and the GEMM consumes (all-gather and
/// all-to-all dispatch: the GEMM needs the rows that arrive), rather than
/// the reverse: planner::exchangesInput. `side` is read for all-to-all only.
bool collectiveProduces(
    planner::Collective collective,
    planner::AllToAllSide side = planner::AllToAllSide::Dispatch);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_TILESCHEDULE_H

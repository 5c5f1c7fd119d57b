//===- Repetitions.h - The order of a timed window's repetitions -*- C++
//-*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// What one repetition of a timed window enqueues, and in which order
// (Timing.cpp runs it over CUDA events, the gate and overlap_barrier; the
// tests over a recorder). Two biases it keeps out of the window:
//
//   - Host enqueue skew between ranks. The gate (a kernel that holds the
//     start stream until the host has enqueued every call, Gate.h) goes
//     first, the cross-rank barrier behind it, the start event behind the
//     barrier, then the window's work. On the device the barrier runs only
//     once every rank has opened its gate, that is once every rank's host
//     has enqueued its whole window; the start event follows it. (A
//     barrier before the gate, as before, let a rank whose host finished
//     first open its gate and start its clock while a slower rank still
//     enqueued: the skew landed in the window. A host barrier after the
//     enqueue cannot be an NCCL collective: it would queue behind the
//     window's gated collectives on the same communicator.)
//   - Lazy kernel loading. Under CUDA's lazy loading (the default since
//     CUDA 12.2) the first launch of a kernel loads it, which may wait for
//     the device, where the gate spins: up to the gate's bound (200 ms)
//     per new kernel in a gated repetition. The first repetition runs
//     without the gate and is never timed, and there is always one: every
//     kernel the window launches (the same `enqueue`) is loaded before a
//     gated repetition.
//
// Pure C++ (OverlapCalibration).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_REPETITIONS_H
#define OVERLAP_CALIBRATION_REPETITIONS_H

#include <vector>

namespace overlap {
namespace calibration {

/// The steps of one repetition.
class RepetitionSteps {
public:
  virtual ~RepetitionSteps() = default;
  /// The host waits until the context's streams are idle.
  virtual void synchronize() = 0;
  /// Closes the gate and enqueues it on the start stream; false when there
  /// is no gate (OVERLAP_TIMING_GATE=0, or a CUDA call for it failed).
  virtual bool closeGate() = 0;
  /// Enqueues the cross-rank barrier on the start stream.
  virtual void barrier() = 0;
  /// Records the start event on the start stream (the end stream waits
  /// for it).
  virtual void recordStart() = 0;
  /// Enqueues the window's work.
  virtual void enqueue() = 0;
  /// Records the stop event on the end stream.
  virtual void recordStop() = 0;
  /// Opens the gate from the host.
  virtual void openGate() = 0;
  /// Waits for the repetition and keeps its time when `timed`.
  virtual void collect(bool timed) = 0;
};

/// One repetition of a plan.
struct Repetition {
  bool gated; // held by the gate while the host enqueues
  bool timed; // its time is one of the samples
};

/// `warmup` untimed repetitions (at least one: the first loads every
/// kernel, ungated), then `iters` timed ones, gated when `gate`.
std::vector<Repetition> repetitionPlan(int warmup, int iters, bool gate);

/// Runs one repetition; `ranks`: more than one rank (the barrier).
void runRepetition(RepetitionSteps &steps, bool ranks, Repetition repetition);

/// Runs every repetition of repetitionPlan(warmup, iters, true): a
/// repetition is gated only while closeGate succeeds.
void runRepetitions(RepetitionSteps &steps, bool ranks, int warmup, int iters);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_REPETITIONS_H

//===- Simulator.h - Two-stream pipeline timeline --------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The Planner's execution model: two streams, one task per tile on each.
// The producer stream runs its tasks back to back; consumer task i starts
// when producer task i and consumer task i-1 are done. For a matmul followed
// by all-reduce or reduce-scatter the producer is the GEMM; for all-gather
// followed by a matmul it is the collective.
//
// Contention is a fluid model: while both streams are busy the producer
// progresses at 1/computeContention (or commContention) of its speed and
// likewise the consumer; a stream running alone runs at full speed.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_SIMULATOR_H
#define OVERLAP_PLANNER_SIMULATOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <string>
#include <vector>

namespace overlap {
namespace planner {

enum class Stream { Compute, Comm };

/// Which stream produces the data the other consumes.
enum class PipelineOrder {
  ComputeThenComm, ///< matmul -> all-reduce / reduce-scatter
  CommThenCompute, ///< all-gather -> matmul
};

/// Uncontended durations (µs) of each tile's tasks, in tile order.
struct PipelineSpec {
  std::vector<double> computeUs;
  std::vector<double> commUs;
  PipelineOrder order = PipelineOrder::ComputeThenComm;
  double computeContention = 1.0;
  double commContention = 1.0;
};

struct SimTask {
  Stream stream = Stream::Compute;
  size_t tile = 0;
  double startUs = 0;
  double endUs = 0;
  /// Uncontended duration; endUs - startUs is larger when contended.
  double workUs = 0;
};

struct SimResult {
  /// Every task, sorted by stream (compute first) then tile.
  std::vector<SimTask> tasks;
  double makespanUs = 0;
  double computeWorkUs = 0;
  double commWorkUs = 0;
  PipelineOrder order = PipelineOrder::ComputeThenComm;

  const SimTask &task(Stream stream, size_t tile) const;
  size_t numTiles() const { return tasks.size() / 2; }
};

/// Event-driven simulation of the whole timeline.
SimResult simulate(const PipelineSpec &spec);

/// The makespan only, by the closed-form per-tile recurrence that the exact
/// planner also uses; equals simulate(spec).makespanUs up to rounding.
/// `producerUs` and `consumerUs` are in pipeline order (for all-gather the
/// producer is the collective).
double pipelineMakespan(llvm::ArrayRef<double> producerUs,
                        llvm::ArrayRef<double> consumerUs,
                        double producerContention, double consumerContention);

/// One step of that recurrence. State: `timeUs` is when the producer
/// finished its latest task, `backlogUs` the consumer's uncontended work
/// still queued at that moment. Returns the state after the producer runs
/// one more task of `producerUs` whose consumer task takes `consumerUs`.
struct PipelineState {
  double timeUs = 0;
  double backlogUs = 0;
};
inline PipelineState pipelineStep(PipelineState state, double producerUs,
                                  double consumerUs, double producerContention,
                                  double consumerContention) {
  // While the producer runs its next task, the consumer works off its
  // backlog; both are slowed while both run.
  const double w = state.backlogUs, c = producerUs;
  const double cP = producerContention, cC = consumerContention;
  if (w <= 0) {
    state.timeUs += c;
    state.backlogUs = consumerUs;
  } else if (cC * w >= cP * c) {
    // The producer finishes first; the consumer did cP*c/cC of its work.
    state.timeUs += cP * c;
    state.backlogUs = w - cP * c / cC + consumerUs;
  } else {
    // The consumer drains first, then the producer runs alone.
    state.timeUs += cC * w + (c - cC * w / cP);
    state.backlogUs = consumerUs;
  }
  return state;
}

/// Chrome trace-event JSON (Perfetto opens it): one thread per stream, one
/// complete ("X") slice per task, timestamps in µs. `tileRows` labels the
/// slices and may be empty.
std::string toChromeTrace(const SimResult &result,
                          llvm::ArrayRef<int64_t> tileRows,
                          llvm::StringRef title);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_SIMULATOR_H

//===- StepRendezvous.h - Device calls of one step, one launch --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// A framework that runs an Overlap-compiled layer calls it once per device
// and step (JAX: one XLA FFI call per device of the mesh, each on its own
// thread), while the host backend runs every rank of a program in one
// launch. A StepRendezvous joins them: rank r's k-th call belongs to step
// k; each call leaves its inputs and output buffers and waits; the last of
// a step runs the launch with all of them and every call returns its
// outcome. A rank that does not come within the timeout fails the step for
// every call of it (naming the missing ranks) instead of hanging.
//
// A framework that names its executions (XLA's RunId: the same for every
// device of one execution, new for the next) passes that name: steps are
// then counted per execution, so a device whose execution stopped early
// (an earlier call of it failed) starts the next execution in step with
// the others. Counted over the layer's whole life instead, that device
// stayed one call behind and every later step of the layer failed.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_STEPRENDEZVOUS_H
#define OVERLAP_LOADER_STEPRENDEZVOUS_H

#include <climits>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace overlap {
namespace exec {

class StepRendezvous {
public:
  /// Runs one step: inputs[rank][arg], outputs[rank][result] (the callers'
  /// buffers, valid while the launch runs). False with `error` on failure.
  using Launch = std::function<bool(
      const std::vector<std::vector<const void *>> &inputs,
      const std::vector<std::vector<void *>> &outputs, std::string &error)>;

  StepRendezvous(int ranks, int64_t timeoutMs, Launch launch);

  /// Rank `rank`'s next call: blocks until its step ran. False with
  /// `error` when the launch failed, a rank did not come in time, or the
  /// arguments are wrong (a rank out of range).
  bool call(int rank, std::vector<const void *> inputs,
            std::vector<void *> outputs, std::string &error) {
    return call(rank, kNoRun, std::move(inputs), std::move(outputs), error);
  }
  /// The same within execution `run` (any value but kNoRun): rank r's k-th
  /// call of execution `run` is step k of that execution.
  static constexpr int64_t kNoRun = INT64_MIN;
  bool call(int rank, int64_t run, std::vector<const void *> inputs,
            std::vector<void *> outputs, std::string &error);

  int ranks() const { return ranks_; }
  /// Steps launched so far (successful or not).
  int64_t launches() const;

private:
  struct Step {
    std::vector<std::vector<const void *>> inputs;
    std::vector<std::vector<void *>> outputs;
    std::vector<char> arrived;
    int count = 0, left = 0;
    bool done = false, ok = false;
    std::string error;
  };

  const int ranks_;
  const int64_t timeoutMs_;
  Launch launch_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  /// A step's name: its execution and its index in it.
  using Key = std::pair<int64_t, uint64_t>;
  /// Drops failed steps that some rank never came to, past the newest
  /// kKeptFailed of them (under the lock).
  void forgetOldFailures();
  static constexpr size_t kKeptFailed = 64;

  std::vector<uint64_t> calls_; ///< per rank: calls made in `runs_`'s run
  std::vector<int64_t> runs_;   ///< per rank: the execution of its last call
  std::map<Key, std::shared_ptr<Step>> steps_;
  int64_t launches_ = 0;
};

} // namespace exec
} // namespace overlap

#endif // OVERLAP_LOADER_STEPRENDEZVOUS_H

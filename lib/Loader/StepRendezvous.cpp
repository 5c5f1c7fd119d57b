//===- StepRendezvous.cpp - Device calls of one step, one launch -*- C++ -*-=//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/StepRendezvous.h"

#include <chrono>

using namespace overlap::exec;

StepRendezvous::StepRendezvous(int ranks, int64_t timeoutMs, Launch launch)
    : ranks_(ranks), timeoutMs_(timeoutMs), launch_(std::move(launch)),
      calls_(static_cast<size_t>(ranks > 0 ? ranks : 0), 0),
      runs_(static_cast<size_t>(ranks > 0 ? ranks : 0), kNoRun) {}

int64_t StepRendezvous::launches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return launches_;
}

void StepRendezvous::forgetOldFailures() {
  size_t failed = 0;
  auto isFailed = [](const Step &step) { return step.done && !step.ok; };
  for (const auto &entry : steps_)
    failed += isFailed(*entry.second);
  for (auto it = steps_.begin(); it != steps_.end() && failed > kKeptFailed;) {
    if (isFailed(*it->second)) {
      it = steps_.erase(it);
      --failed;
    } else {
      ++it;
    }
  }
}

bool StepRendezvous::call(int rank, int64_t run,
                          std::vector<const void *> inputs,
                          std::vector<void *> outputs, std::string &error) {
  if (rank < 0 || rank >= ranks_) {
    error = "rank " + std::to_string(rank) + " called a layer of " +
            std::to_string(ranks_) + " ranks";
    return false;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  const size_t r = static_cast<size_t>(rank);
  if (run != runs_[r]) { // a new execution: its first step
    runs_[r] = run;
    calls_[r] = 0;
  }
  const uint64_t index = calls_[r]++;
  const Key key{run, index};
  std::shared_ptr<Step> &slot = steps_[key];
  if (!slot) {
    slot = std::make_shared<Step>();
    slot->inputs.resize(static_cast<size_t>(ranks_));
    slot->outputs.resize(static_cast<size_t>(ranks_));
    slot->arrived.assign(static_cast<size_t>(ranks_), 0);
  }
  std::shared_ptr<Step> step = slot;
  step->inputs[static_cast<size_t>(rank)] = std::move(inputs);
  step->outputs[static_cast<size_t>(rank)] = std::move(outputs);
  step->arrived[static_cast<size_t>(rank)] = 1;
  ++step->count;
  auto leave = [&] {
    // The last call of a step to leave forgets it.
    if (++step->left == ranks_)
      steps_.erase(key);
    else if (step->done)
      forgetOldFailures();
  };
  if (step->done) { // failed before this rank came
    error = step->error;
    leave();
    return false;
  }
  if (step->count == ranks_) {
    ++launches_;
    lock.unlock();
    std::string why;
    bool ok = launch_(step->inputs, step->outputs, why);
    lock.lock();
    step->done = true;
    step->ok = ok;
    step->error = why;
    changed_.notify_all();
  } else {
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(timeoutMs_);
    if (!changed_.wait_until(lock, deadline, [&] { return step->done; })) {
      std::string missing;
      for (int r = 0; r < ranks_; ++r)
        if (!step->arrived[static_cast<size_t>(r)])
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      step->done = true;
      step->ok = false;
      step->error =
          "call " + std::to_string(index + 1) + " of this layer: rank " +
          std::to_string(rank) + " waited " + std::to_string(timeoutMs_) +
          " ms for rank" +
          (missing.find(',') == std::string::npos ? " " : "s ") + missing +
          ", which did not call it (every device must call the layer once "
          "per step, the same number of times)";
      changed_.notify_all();
    }
  }
  error = step->ok ? std::string() : step->error;
  bool ok = step->ok;
  leave();
  return ok;
}

//===- BoundedCall.h - A deadline for a call that may block -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Some calls block until every rank makes them and take no timeout of their
// own (ncclCommSplit on a blocking communicator waits for every rank of the
// parent). callWithin runs such a call on a thread of its own and waits for
// it at most until a deadline. At the deadline the caller gets on with its
// error and the thread is left behind, still in the call: nothing is done
// to the call's objects from another thread. (NCCL forbids two threads
// operating on one communicator, or on a communicator and a child sharing
// its resources, at the same time: an ncclCommAbort from a watchdog thread
// could free the communicator under the blocked split.) The call's
// captures live in state shared with the thread, so a call that returns
// late finds them alive; `late` then gets its result, on that thread.
// Plain C++17, unit-tested without a GPU (unittests/Runtime/
// BoundedCallTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_BOUNDEDCALL_H
#define OVERLAP_LIB_RUNTIME_BOUNDEDCALL_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace overlap {
namespace runtime {

/// Runs `call` on a new thread and waits for it at most `timeoutMs` (> 0).
/// Returns its result when it finished in time; std::nullopt when it did
/// not: the thread goes on in the call (detached) and, if the call ever
/// returns, hands its result to `late` (may be empty) on that thread.
template <typename R>
std::optional<R> callWithin(int64_t timeoutMs, std::function<R()> call,
                            std::function<void(R)> late = {}) {
  struct State {
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    bool abandoned = false;
    std::optional<R> result;
    std::function<R()> call;
    std::function<void(R)> late;
  };
  auto state = std::make_shared<State>();
  state->call = std::move(call);
  state->late = std::move(late);
  std::thread([state] {
    R value = state->call();
    std::unique_lock<std::mutex> lock(state->mutex);
    state->finished = true;
    if (state->abandoned) {
      lock.unlock();
      if (state->late)
        state->late(std::move(value));
      return;
    }
    state->result = std::move(value);
    state->done.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(state->mutex);
  if (state->done.wait_for(lock, std::chrono::milliseconds(timeoutMs),
                           [&] { return state->finished; }))
    return std::move(state->result);
  state->abandoned = true;
  return std::nullopt;
}

} // namespace runtime
} // namespace overlap

#endif // OVERLAP_LIB_RUNTIME_BOUNDEDCALL_H

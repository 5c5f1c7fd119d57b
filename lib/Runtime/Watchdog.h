//===- Watchdog.h - A deadline for a call that may block --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Some calls block until every rank makes them and take no timeout of their
// own (ncclCommSplit on a blocking communicator waits for every rank of the
// parent). A Watchdog runs `onTimeout` on its own thread if the call has not
// finished by the deadline; for NCCL that is ncclCommAbort of the
// communicator the call blocks on, which makes it return. Plain C++17, so
// it is unit-tested without a GPU (unittests/Runtime/WatchdogTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_WATCHDOG_H
#define OVERLAP_LIB_RUNTIME_WATCHDOG_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace overlap {
namespace runtime {

class Watchdog {
public:
  /// Starts watching: `onTimeout` runs once, on the watchdog's thread, if
  /// finish() was not called within `timeoutMs` (> 0).
  Watchdog(int64_t timeoutMs, std::function<void()> onTimeout)
      : onTimeout_(std::move(onTimeout)) {
    auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    thread_ = std::thread([this, deadline] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (changed_.wait_until(lock, deadline, [this] { return finished_; }))
        return;
      timedOut_ = true;
      lock.unlock();
      onTimeout_();
    });
  }
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;
  ~Watchdog() { finish(); }

  /// The watched call returned: stops watching, after `onTimeout` if it is
  /// running. True when the deadline passed first (onTimeout ran).
  bool finish() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable())
      thread_.join();
    return timedOut_;
  }

private:
  std::function<void()> onTimeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool finished_ = false;
  bool timedOut_ = false;
  std::thread thread_;
};

} // namespace runtime
} // namespace overlap

#endif // OVERLAP_LIB_RUNTIME_WATCHDOG_H

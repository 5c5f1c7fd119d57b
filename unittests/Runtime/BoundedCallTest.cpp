//===- BoundedCallTest.cpp - A deadline for a blocking call -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// lib/Runtime/BoundedCall.h, which bounds the CUDA backend's ncclCommSplit:
// a call that returns in time gives its result; one that blocks past the
// deadline is left alone on its thread (nothing runs beside it on its
// objects: the old watchdog aborted the communicator from another thread
// while the split still used it), and when it returns late it finds its
// captures alive and hands its result to `late`.
//
//===----------------------------------------------------------------------===//

#include "BoundedCall.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using overlap::runtime::callWithin;
using Clock = std::chrono::steady_clock;

namespace {

/// A stand-in for a blocking split: blocks until released, recording what
/// happened to "its communicator" in order.
struct BlockedCall {
  std::mutex mutex;
  std::condition_variable cv;
  bool released = false;
  std::vector<std::string> events;
  void record(const std::string &e) {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(e);
    cv.notify_all();
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    released = true;
    cv.notify_all();
  }
  int run() {
    record("enter");
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return released; });
    events.push_back("leave");
    cv.notify_all();
    return 7;
  }
};

TEST(BoundedCall, ACallThatReturnsInTimeGivesItsResult) {
  std::atomic<int> late{0};
  std::optional<int> r = callWithin<int>(
      5000, [] { return 42; }, [&](int) { ++late; });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, 42);
  EXPECT_EQ(late.load(), 0);
}

TEST(BoundedCall, ABlockedCallIsLeftAloneAtTheDeadline) {
  auto blocked = std::make_shared<BlockedCall>();
  std::atomic<int> lateValue{-1};
  auto start = Clock::now();
  std::optional<int> r = callWithin<int>(
      100, [blocked] { return blocked->run(); },
      [blocked, &lateValue](int v) {
        lateValue = v;
        blocked->record("late");
      });
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                    Clock::now() - start)
                    .count();
  EXPECT_FALSE(r.has_value());
  EXPECT_GE(waited, 100);
  EXPECT_LT(waited, 20000);
  {
    // At the deadline the call is still in progress and nothing else has
    // touched its objects (the watchdog aborted them here, beside it).
    std::lock_guard<std::mutex> lock(blocked->mutex);
    EXPECT_EQ(blocked->events, std::vector<std::string>{"enter"});
  }
  // Released later (a peer finally splits), the call returns normally on
  // its own thread, and its result goes to `late`.
  blocked->release();
  std::unique_lock<std::mutex> lock(blocked->mutex);
  ASSERT_TRUE(blocked->cv.wait_for(lock, std::chrono::seconds(30), [&] {
    return blocked->events.size() == 3;
  }));
  EXPECT_EQ(blocked->events,
            (std::vector<std::string>{"enter", "leave", "late"}));
  EXPECT_EQ(lateValue.load(), 7);
}

} // namespace

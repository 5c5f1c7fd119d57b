//===- WatchdogTest.cpp - A deadline for a blocking call --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// lib/Runtime/Watchdog.h, which bounds the CUDA backend's ncclCommSplit
// (its onTimeout aborts the parent communicator, which makes the split
// return): a call that returns in time is left alone; one that blocks is
// released by onTimeout at the deadline, once.
//
//===----------------------------------------------------------------------===//

#include "Watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

using overlap::runtime::Watchdog;
using Clock = std::chrono::steady_clock;

TEST(Watchdog, ACallThatReturnsInTimeIsLeftAlone) {
  std::atomic<int> fired{0};
  Watchdog watchdog(200, [&] { ++fired; });
  EXPECT_FALSE(watchdog.finish());
  EXPECT_FALSE(watchdog.finish()); // again: still not
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(fired.load(), 0);
}

TEST(Watchdog, ABlockedCallIsReleasedAtTheDeadline) {
  // The blocked "split": waits until released, as ncclCommSplit waits until
  // its communicator is aborted.
  std::mutex mutex;
  std::condition_variable cv;
  bool released = false;
  std::atomic<int> fired{0};
  auto start = Clock::now();
  Watchdog watchdog(100, [&] {
    ++fired;
    std::lock_guard<std::mutex> lock(mutex);
    released = true;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(
        cv.wait_for(lock, std::chrono::seconds(30), [&] { return released; }));
  }
  EXPECT_TRUE(watchdog.finish());
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                    Clock::now() - start)
                    .count();
  EXPECT_GE(waited, 100);
  EXPECT_EQ(fired.load(), 1);
}

//===- OptionsTest.cpp - Host options at and past their limits -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Issue 14: a wait timeout from about 9.2e12 ms overflowed the deadline and
// timed out at once; chaos delays were unbounded (2^62 us hung after the
// run had failed, INT64_MAX overflowed) and could not be interrupted.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

using namespace overlap::test;
using Clock = std::chrono::steady_clock;

namespace {

/// One rank: the comm stream waits for a flag that the compute stream
/// raises after 20 ms. Returns launch's status.
overlap_status waitForALateSignal(const overlap_host_options &opts) {
  return launch(1, &opts, [](overlap_context *ctx) {
    overlap_signals *sigs = nullptr;
    overlap_signals_create(ctx, 1, &sigs);
    overlap_launch_host_func(
        ctx, OVERLAP_STREAM_COMPUTE,
        [](void *) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        },
        nullptr);
    overlap_signal(ctx, OVERLAP_STREAM_COMPUTE, sigs, 0);
    overlap_wait(ctx, OVERLAP_STREAM_COMM, sigs, 0);
    overlap_context_synchronize(ctx);
  });
}

TEST(Options, WaitTimeoutHasALimit) {
  overlap_host_options opts = quietOptions(9200000000000);
  EXPECT_EQ(waitForALateSignal(opts), OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_host_launch: wait_timeout_ms is 9200000000000, "
               "expected 0 (the default) to 1000000000 ms "
               "(OVERLAP_MAX_WAIT_TIMEOUT_MS)");
  opts.wait_timeout_ms = -1;
  EXPECT_EQ(waitForALateSignal(opts), OVERLAP_ERROR_INVALID_ARGUMENT);

  // At the limit, the deadline is far away, not in the past.
  opts.wait_timeout_ms = OVERLAP_MAX_WAIT_TIMEOUT_MS;
  EXPECT_EQ(waitForALateSignal(opts), OVERLAP_SUCCESS)
      << overlap_host_launch_error();

  opts.wait_timeout_ms = 0;
  for (const char *value : {"9200000000000", "18446744073709551615"}) {
    ASSERT_EQ(setenv("OVERLAP_WAIT_TIMEOUT_MS", value, 1), 0);
    EXPECT_EQ(waitForALateSignal(opts), OVERLAP_ERROR_INVALID_ARGUMENT)
        << value;
    EXPECT_STREQ(overlap_host_launch_error(),
                 "overlap_host_launch: OVERLAP_WAIT_TIMEOUT_MS must be a "
                 "positive integer of at most 1000000000 (ms)");
  }
  ASSERT_EQ(setenv("OVERLAP_WAIT_TIMEOUT_MS", "1000000000", 1), 0);
  EXPECT_EQ(waitForALateSignal(opts), OVERLAP_SUCCESS)
      << overlap_host_launch_error();
  unsetenv("OVERLAP_WAIT_TIMEOUT_MS");
}

TEST(Options, ChaosDelayHasALimit) {
  overlap_host_options opts = quietOptions(5000);
  opts.chaos = OVERLAP_CHAOS_ON;
  for (int64_t us : {int64_t(1) << 62, std::numeric_limits<int64_t>::max(),
                     OVERLAP_MAX_CHAOS_DELAY_US + 1, int64_t(-1)}) {
    opts.chaos_max_delay_us = us;
    EXPECT_EQ(waitForALateSignal(opts), OVERLAP_ERROR_INVALID_ARGUMENT) << us;
    EXPECT_EQ(std::string(overlap_host_launch_error()),
              "overlap_host_launch: chaos_max_delay_us is " +
                  std::to_string(us) +
                  ", expected 0 (the default) to 10000000 us "
                  "(OVERLAP_MAX_CHAOS_DELAY_US)");
  }
  opts.chaos_max_delay_us = 0;
  ASSERT_EQ(setenv("OVERLAP_HOST_CHAOS_MAX_US", "4611686018427387904", 1), 0);
  EXPECT_EQ(waitForALateSignal(opts), OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_host_launch: OVERLAP_HOST_CHAOS_MAX_US must be an "
               "unsigned integer of at most 10000000 (us)");
  unsetenv("OVERLAP_HOST_CHAOS_MAX_US");
}

TEST(Chaos, DelaysEndWhenTheRunHasFailed) {
  // Rank 1's streams sleep in chaos delays of up to 10 s (the limit) when
  // rank 0 fails, 50 ms in: the delays stop there, so the launch returns
  // the failure long before a delay would have ended.
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    overlap_host_options opts = quietOptions(5000);
    opts.chaos = OVERLAP_CHAOS_ON;
    opts.chaos_seed = seed;
    opts.chaos_max_delay_us = OVERLAP_MAX_CHAOS_DELAY_US;
    Clock::time_point start = Clock::now();
    overlap_status status = launch(2, &opts, [](overlap_context *ctx) {
      if (overlap_context_rank(ctx) == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        float x = 0;
        // lda (0) < k (1): refused by the call, which fails the world.
        overlap_gemm(ctx, OVERLAP_STREAM_COMPUTE, 0, 1, 1, 1, 1, OVERLAP_F32,
                     &x, 0, 0, &x, 1, 0, OVERLAP_F32, &x, 1, 0, 0);
        return;
      }
      overlap_signals *sigs = nullptr;
      overlap_signals_create(ctx, 16, &sigs);
      for (int32_t i = 0; i < 16; ++i) {
        int32_t stream = i % 2;
        overlap_launch_host_func(
            ctx, stream, [](void *) {}, nullptr);
        overlap_signal(ctx, stream, sigs, i);
      }
      overlap_context_synchronize(ctx);
    });
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT)
        << overlap_host_launch_error();
    EXPECT_LT(seconds, 5.0) << "seed " << seed;
  }
}

} // namespace

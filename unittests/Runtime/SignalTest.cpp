//===- SignalTest.cpp - Signal/wait, timeouts, poisoning, chaos -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

using namespace overlap::test;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A host function for a stream: sleeps, then stores a value.
struct DelayedStore {
  int sleepMs;
  std::atomic<int> *target;
  int value;
  static void run(void *user) {
    auto *self = static_cast<DelayedStore *>(user);
    std::this_thread::sleep_for(std::chrono::milliseconds(self->sleepMs));
    self->target->store(self->value);
  }
};

/// A host function for a stream: records what it sees.
struct Observe {
  std::atomic<int> *source;
  int seen = -1;
  static void run(void *user) {
    auto *self = static_cast<Observe *>(user);
    self->seen = self->source->load();
  }
};

TEST(Signals, WaitOrdersStreamsAndEpochsAreReusable) {
  // Each iteration: compute sleeps, stores the iteration number, signals;
  // comm waits and reads. With epochs, iteration 2's wait is not satisfied
  // by iteration 1's still-raised flag.
  std::vector<int> seen;
  overlap_host_options opts = quietOptions(5000);
  overlap_status status = launch(1, &opts, [&](overlap_context *ctx) {
    std::atomic<int> value{0};
    for (int iteration = 1; iteration <= 3; ++iteration) {
      overlap_signals *sigs = nullptr;
      ASSERT_EQ(overlap_signals_acquire(ctx, 42, 2, &sigs), OVERLAP_SUCCESS);
      DelayedStore store{30, &value, iteration};
      Observe observe{&value};
      overlap_launch_host_func(ctx, OVERLAP_STREAM_COMPUTE, DelayedStore::run,
                               &store);
      overlap_signal(ctx, OVERLAP_STREAM_COMPUTE, sigs, 1);
      overlap_wait(ctx, OVERLAP_STREAM_COMM, sigs, 1);
      overlap_launch_host_func(ctx, OVERLAP_STREAM_COMM, Observe::run,
                               &observe);
      ASSERT_EQ(overlap_context_synchronize(ctx), OVERLAP_SUCCESS)
          << overlap_last_error(ctx);
      seen.push_back(observe.seen);
    }
  });
  ASSERT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
}

TEST(Signals, OneKeyWithTwoFlagCountsIsTwoSets) {
  // A plan and its one-tile reference on one context (what overlap-exec
  // --ref does on a GPU) both acquire key 0: the plan with 4 flags, the
  // reference with 1. They get two sets, each reused by its own program
  // with a new epoch, and both programs still order their streams.
  overlap_host_options opts = quietOptions(5000);
  overlap_status status = launch(1, &opts, [&](overlap_context *ctx) {
    std::atomic<int> value{0};
    overlap_signals *first[2] = {nullptr, nullptr};
    for (int round = 0; round < 2; ++round) {
      for (int32_t flags : {4, 1}) {
        overlap_signals *sigs = nullptr;
        ASSERT_EQ(overlap_signals_acquire(ctx, 0, flags, &sigs),
                  OVERLAP_SUCCESS)
            << overlap_last_error(ctx);
        overlap_signals *&seenBefore = first[flags == 4 ? 0 : 1];
        if (round == 0)
          seenBefore = sigs;
        else
          EXPECT_EQ(sigs, seenBefore) << flags << " flags: a new set";
        int stored = round * 10 + flags;
        DelayedStore store{20, &value, stored};
        Observe observe{&value};
        overlap_launch_host_func(ctx, OVERLAP_STREAM_COMPUTE, DelayedStore::run,
                                 &store);
        overlap_signal(ctx, OVERLAP_STREAM_COMPUTE, sigs, flags - 1);
        overlap_wait(ctx, OVERLAP_STREAM_COMM, sigs, flags - 1);
        overlap_launch_host_func(ctx, OVERLAP_STREAM_COMM, Observe::run,
                                 &observe);
        ASSERT_EQ(overlap_context_synchronize(ctx), OVERLAP_SUCCESS)
            << overlap_last_error(ctx);
        EXPECT_EQ(observe.seen, stored);
      }
    }
    EXPECT_NE(first[0], first[1]);
  });
  ASSERT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
}

TEST(Signals, AcquiredFromSeveralThreadsOfOneContext) {
  // Threads that share a context (a runner calling two programs at once)
  // acquire the same keys at the same time: each key is still one set
  // (the context's cache is locked; TSan checks the rest).
  overlap_host_options opts = quietOptions(5000);
  constexpr int kThreads = 4, kKeys = 64;
  overlap_status status = launch(1, &opts, [&](overlap_context *ctx) {
    std::vector<std::vector<overlap_signals *>> got(
        kThreads, std::vector<overlap_signals *>(kKeys, nullptr));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (int k = 0; k < kKeys; ++k)
          overlap_signals_acquire(ctx, (k * 7 + t) % kKeys, 2,
                                  &got[t][(k * 7 + t) % kKeys]);
      });
    for (std::thread &thread : threads)
      thread.join();
    for (int k = 0; k < kKeys; ++k)
      for (int t = 0; t < kThreads; ++t) {
        ASSERT_NE(got[t][k], nullptr) << "key " << k << ", thread " << t;
        EXPECT_EQ(got[t][k], got[0][k]) << "key " << k << ": two sets";
      }
  });
  ASSERT_EQ(status, OVERLAP_SUCCESS) << overlap_host_launch_error();
}

TEST(Signals, ExplicitEpochsAndCreatedSets) {
  overlap_host_options opts = quietOptions(5000);
  overlap_status status = launch(1, &opts, [&](overlap_context *ctx) {
    overlap_signals *sigs = nullptr;
    ASSERT_EQ(overlap_signals_create(ctx, 1, &sigs), OVERLAP_SUCCESS);
    std::atomic<int> value{0};
    for (int iteration = 1; iteration <= 2; ++iteration) {
      if (iteration > 1)
        overlap_signals_next_epoch(ctx, sigs);
      DelayedStore store{30, &value, iteration};
      Observe observe{&value};
      overlap_launch_host_func(ctx, 0, DelayedStore::run, &store);
      overlap_signal(ctx, 0, sigs, 0);
      overlap_wait(ctx, 1, sigs, 0);
      overlap_launch_host_func(ctx, 1, Observe::run, &observe);
      overlap_context_synchronize(ctx);
      EXPECT_EQ(observe.seen, iteration);
    }
    EXPECT_EQ(overlap_signals_destroy(ctx, sigs), OVERLAP_SUCCESS);
    // A keyed set belongs to the context and cannot be destroyed by hand.
    overlap_signals *keyed = nullptr;
    overlap_signals_acquire(ctx, 1, 1, &keyed);
    EXPECT_EQ(overlap_signals_destroy(ctx, keyed),
              OVERLAP_ERROR_INVALID_ARGUMENT);
  });
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_signals_destroy: rank 0: the set of key 1 belongs to "
               "the context (from overlap_signals_acquire)");
}

TEST(Signals, MissingSignalTimesOutNamingRankStreamAndFlag) {
  // Rank 1 waits for flag 3, which nobody raises; rank 0 meanwhile sits in
  // an all-reduce that rank 1's comm stream never reaches. Rank 1's wait
  // times out first (rank 0 starts later), so it is the root cause, and
  // rank 0 is released with an abort instead of hanging.
  std::string rank0Error;
  overlap_host_options opts = quietOptions(200);
  Clock::time_point start = Clock::now();
  overlap_status status = launch(2, &opts, [&](overlap_context *ctx) {
    overlap_signals *sigs = nullptr;
    overlap_signals_acquire(ctx, 0, 4, &sigs);
    std::atomic<int> dummy{0};
    DelayedStore pause{150, &dummy, 1};
    if (overlap_context_rank(ctx) == 1)
      overlap_wait(ctx, OVERLAP_STREAM_COMM, sigs, 3);
    else
      overlap_launch_host_func(ctx, OVERLAP_STREAM_COMM, DelayedStore::run,
                               &pause);
    float x[4] = {1, 2, 3, 4};
    overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, 7, nullptr, OVERLAP_F32,
                       OVERLAP_SUM, x, x, 4);
    overlap_status s = overlap_context_synchronize(ctx);
    if (overlap_context_rank(ctx) == 0) {
      EXPECT_EQ(s, OVERLAP_ERROR_ABORTED);
      rank0Error = overlap_last_error(ctx);
    } else {
      EXPECT_EQ(s, OVERLAP_ERROR_TIMEOUT);
    }
  });
  double seconds = secondsSince(start);
  EXPECT_EQ(status, OVERLAP_ERROR_TIMEOUT);
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_wait: rank 1, stream comm, flag 3: not signalled "
               "within 200 ms (epoch 1, flag at 0); a slow step (a large "
               "host GEMM) reads the same as a rank that never signals: for "
               "a large program raise the timeout (--wait-timeout-ms, "
               "wait_timeout_ms, OVERLAP_WAIT_TIMEOUT_MS)");
  EXPECT_EQ(rank0Error.rfind("overlap_all_reduce: rank 0, stream comm, tile "
                             "7: abandoned: rank 1 failed first (overlap_wait",
                             0),
            0u)
      << rank0Error;
  EXPECT_LT(seconds, 3.0);
}

TEST(Signals, TimeoutComesFromTheEnvironment) {
  ASSERT_EQ(setenv("OVERLAP_WAIT_TIMEOUT_MS", "120", 1), 0);
  overlap_host_options opts = quietOptions(0);
  overlap_status status = launch(1, &opts, [&](overlap_context *ctx) {
    overlap_signals *sigs = nullptr;
    overlap_signals_create(ctx, 1, &sigs);
    overlap_wait(ctx, OVERLAP_STREAM_COMPUTE, sigs, 0);
  });
  EXPECT_EQ(status, OVERLAP_ERROR_TIMEOUT);
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_wait: rank 0, stream compute, flag 0: not signalled "
               "within 120 ms (epoch 1, flag at 0); a slow step (a large "
               "host GEMM) reads the same as a rank that never signals: for "
               "a large program raise the timeout (--wait-timeout-ms, "
               "wait_timeout_ms, OVERLAP_WAIT_TIMEOUT_MS)");

  ASSERT_EQ(setenv("OVERLAP_WAIT_TIMEOUT_MS", "soon", 1), 0);
  status = launch(1, &opts, [](overlap_context *) {});
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_host_launch: OVERLAP_WAIT_TIMEOUT_MS must be a "
               "positive integer of at most 1000000000 (ms)");
  unsetenv("OVERLAP_WAIT_TIMEOUT_MS");
}

TEST(Signals, MissingPeerInACollectiveTimesOut) {
  overlap_host_options opts = quietOptions(200);
  overlap_status status = launch(3, &opts, [&](overlap_context *ctx) {
    if (overlap_context_rank(ctx) == 1)
      return; // never joins
    float x[2] = {1, 2};
    overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, 4, nullptr, OVERLAP_F32,
                       OVERLAP_SUM, x, x, 2);
  });
  EXPECT_EQ(status, OVERLAP_ERROR_TIMEOUT);
  std::string error = overlap_host_launch_error();
  EXPECT_NE(error.find("stream comm, tile 4: rank(s) 1 did not join within "
                       "200 ms (group of 3, call 0 on the group)"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.rfind("overlap_all_reduce: rank ", 0), 0u) << error;
}

TEST(Signals, AnErrorOnOneRankReleasesTheOthersQuickly) {
  // Default 10 s timeout: the others must not wait for it.
  overlap_host_options opts = quietOptions(10000);
  Clock::time_point start = Clock::now();
  std::atomic<int> aborted{0};
  overlap_status status = launch(4, &opts, [&](overlap_context *ctx) {
    float x[2] = {1, 2};
    if (overlap_context_rank(ctx) == 2) {
      // k = 2 > lda = 1: refused at the call.
      overlap_gemm(ctx, OVERLAP_STREAM_COMPUTE, 9, 1, 1, 1, 2, OVERLAP_F32, x,
                   1, 0, x, 1, 0, OVERLAP_F32, x, 1, 0, 0);
    }
    overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, 0, nullptr, OVERLAP_F32,
                       OVERLAP_SUM, x, x, 2);
    overlap_group *group = nullptr;
    overlap_status split = overlap_group_split(ctx, nullptr, 0, 0, &group);
    if (overlap_context_synchronize(ctx) == OVERLAP_ERROR_ABORTED &&
        split == OVERLAP_ERROR_ABORTED)
      ++aborted;
  });
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_gemm: rank 2, stream compute, tile 9: lda (1) < k (2)");
  EXPECT_EQ(aborted.load(), 3);
  EXPECT_LT(secondsSince(start), 2.0);
}

TEST(Signals, MismatchedCollectivesFailInsteadOfMixing) {
  overlap_host_options opts = quietOptions(5000);
  overlap_status status = launch(2, &opts, [&](overlap_context *ctx) {
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    int rank = overlap_context_rank(ctx);
    overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, 0, nullptr, OVERLAP_F32,
                       OVERLAP_SUM, x, x, rank == 0 ? 8 : 9);
    overlap_context_synchronize(ctx);
  });
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  std::string error = overlap_host_launch_error();
  EXPECT_NE(error.find("stream comm, tile 0: mismatched collectives as call 0 "
                       "on the group: this rank issued overlap_all_reduce(f32, "
                       "sum, count "),
            std::string::npos)
      << error;

  // A split on one rank against a barrier on the other.
  status = launch(2, &opts, [&](overlap_context *ctx) {
    if (overlap_context_rank(ctx) == 0) {
      overlap_barrier(ctx, OVERLAP_STREAM_COMM, 1, nullptr);
      overlap_context_synchronize(ctx);
    } else {
      overlap_group *group = nullptr;
      overlap_group_split(ctx, nullptr, 0, 0, &group);
    }
  });
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  error = overlap_host_launch_error();
  EXPECT_NE(error.find("issued overlap_group_split"), std::string::npos)
      << error;
  EXPECT_NE(error.find("issued overlap_barrier"), std::string::npos) << error;
}

TEST(Signals, BadStreamAndFlag) {
  overlap_host_options opts = quietOptions();
  overlap_status status = launch(1, &opts, [&](overlap_context *ctx) {
    overlap_signals *sigs = nullptr;
    overlap_signals_create(ctx, 2, &sigs);
    EXPECT_EQ(overlap_signal(ctx, OVERLAP_STREAM_COMPUTE, sigs, 2),
              OVERLAP_ERROR_INVALID_ARGUMENT);
  });
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_signal: rank 0, stream compute, flag 2: no such flag "
               "(the set has 2)");

  status = launch(1, &opts, [&](overlap_context *ctx) {
    overlap_signals *sigs = nullptr;
    overlap_signals_create(ctx, 2, &sigs);
    overlap_wait(ctx, 2, sigs, 0);
  });
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_wait: rank 0, stream 2, flag 0: no such stream "
               "(the context has 2)");
}

//===----------------------------------------------------------------------===//
// Chaos: a forgotten wait must show; the correct program must not care
//===----------------------------------------------------------------------===//

/// The scheduled shape of matmul_all_reduce on R ranks: per tile, a GEMM on
/// the compute stream and an in-place all-reduce on the comm stream, joined
/// by signal/wait (unless `forgetWaits`). Returns the number of elements
/// on all ranks that differ from the unsplit program (one GEMM, then one
/// all-reduce).
size_t runMatmulAllReduce(const overlap_host_options &opts, bool forgetWaits,
                          std::string &error) {
  const int ranks = 2;
  const int64_t m = 64, n = 48, k = 32, tileRows = 16;
  std::atomic<size_t> differ{0};
  overlap_status status = launch(ranks, &opts, [&](overlap_context *ctx) {
    int rank = overlap_context_rank(ctx);
    Buffer a(OVERLAP_F32, m * k), b(OVERLAP_F32, k * n), c(OVERLAP_F32, m * n);
    a.randomize(100 + rank);
    b.randomize(200 + rank);
    c.randomize(300 + rank);
    Buffer ref = c;

    // Reference: unsplit, on one stream.
    overlap_gemm(ctx, 0, -1, 1, m, n, k, OVERLAP_F32, a.data(), k, 0, b.data(),
                 n, 0, OVERLAP_F32, ref.data(), n, 0, 0);
    overlap_all_reduce(ctx, 0, -1, nullptr, OVERLAP_F32, OVERLAP_SUM,
                       ref.data(), ref.data(), m * n);
    overlap_context_synchronize(ctx);

    overlap_signals *sigs = nullptr;
    overlap_signals_acquire(ctx, 0, m / tileRows, &sigs);
    for (int64_t t = 0; t < m / tileRows; ++t) {
      float *cTile = static_cast<float *>(c.data()) + t * tileRows * n;
      const float *aTile =
          static_cast<const float *>(a.data()) + t * tileRows * k;
      overlap_gemm(ctx, OVERLAP_STREAM_COMPUTE, t, 1, tileRows, n, k,
                   OVERLAP_F32, aTile, k, 0, b.data(), n, 0, OVERLAP_F32, cTile,
                   n, 0, 0);
      overlap_signal(ctx, OVERLAP_STREAM_COMPUTE, sigs, int32_t(t));
      if (!forgetWaits)
        overlap_wait(ctx, OVERLAP_STREAM_COMM, sigs, int32_t(t));
      overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, t, nullptr, OVERLAP_F32,
                         OVERLAP_SUM, cTile, cTile, tileRows * n);
    }
    overlap_context_synchronize(ctx);
    for (size_t i = 0; i < c.size(); ++i)
      if (c.bits(i) != ref.bits(i))
        ++differ;
  });
  if (status != OVERLAP_SUCCESS)
    error = overlap_host_launch_error();
  return differ.load();
}

TEST(Chaos, CorrectProgramIsAlwaysRight) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    overlap_host_options opts = quietOptions(5000);
    opts.chaos = OVERLAP_CHAOS_ON;
    opts.chaos_seed = seed;
    std::string error;
    EXPECT_EQ(runMatmulAllReduce(opts, false, error), 0u) << "seed " << seed;
    EXPECT_EQ(error, "");
  }
}

TEST(Chaos, ForgottenWaitGivesAWrongResultForEverySeed) {
  // Chaos holds back the GEMM tiles (each is followed by a signal: a
  // producer) three times in four for 5 to 10 ms, and the all-reduces that
  // lack their waits run first, on every seed. (Random delays of any task
  // let this program pass for some seeds: 173 of 200 runs wrong per seed.
  // With 1 to 2 ms a machine loaded by other jobs let one seed pass once:
  // a rank's comm thread descheduled that long joins the all-reduce late.)
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    overlap_host_options opts = quietOptions(5000);
    opts.chaos = OVERLAP_CHAOS_ON;
    opts.chaos_seed = seed;
    opts.chaos_max_delay_us = 10000;
    std::string error;
    EXPECT_GT(runMatmulAllReduce(opts, true, error), 0u) << "seed " << seed;
    EXPECT_EQ(error, "");
  }
}

TEST(Chaos, SeedComesFromTheEnvironment) {
  overlap_host_options opts;
  overlap_host_options_init(&opts);
  opts.wait_timeout_ms = 5000;
  ASSERT_EQ(setenv("OVERLAP_HOST_CHAOS", "3", 1), 0);
  std::string error;
  EXPECT_EQ(runMatmulAllReduce(opts, false, error), 0u);
  EXPECT_EQ(error, "");
  ASSERT_EQ(setenv("OVERLAP_HOST_CHAOS", "x", 1), 0);
  EXPECT_EQ(launch(1, &opts, [](overlap_context *) {}),
            OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(overlap_host_launch_error(),
               "overlap_host_launch: OVERLAP_HOST_CHAOS must be a seed (an "
               "unsigned integer)");
  unsetenv("OVERLAP_HOST_CHAOS");
}

} // namespace

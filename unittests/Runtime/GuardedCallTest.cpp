//===- GuardedCallTest.cpp - Failed checks inside a guarded call -*- C++
//-*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// overlap_context_call_guarded and overlap_check_failed (issue 48, item 8):
// a failed run-time check inside the guard fails its rank with the check's
// message and returns to the guard, the other ranks' waits on it fail with
// that root cause instead of timing out, nested guards unwind to the
// innermost, and outside any guard the check still ends the process after
// saying why.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include "overlap/Runtime/overlap_runtime.h"

#include "gtest/gtest.h"

#include <atomic>
#include <cstring>
#include <string>

using namespace overlap::test;

namespace {

const char kMessage[] = "overlap: run-time check failed: a size of -1\n";

void failCheck(void *reached) {
  overlap_check_failed(kMessage, sizeof kMessage - 1);
  *static_cast<std::atomic<int> *>(reached) += 100; // never runs
}

TEST(GuardedCall, AFailedCheckFailsItsRankAndEndsTheOthersWaits) {
  std::atomic<int> reached{0};
  std::atomic<int> guarded[3] = {{-1}, {-1}, {-1}};
  std::atomic<int> synced[3] = {{-1}, {-1}, {-1}};
  // The others must hear of rank 1 (ABORTED), not wait for their timeout
  // (TIMEOUT after 20 s).
  overlap_host_options opts = quietOptions(20000);
  overlap_status status = launch(3, &opts, [&](overlap_context *ctx) {
    int rank = overlap_context_rank(ctx);
    if (rank == 1) {
      guarded[rank] = overlap_context_call_guarded(ctx, failCheck, &reached);
      return;
    }
    float in[4] = {1, 2, 3, 4}, out[4];
    guarded[rank] = overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, 0, nullptr,
                                       OVERLAP_F32, OVERLAP_SUM, in, out, 4);
    synced[rank] = overlap_context_synchronize(ctx);
  });
  EXPECT_EQ(synced[0].load(), OVERLAP_ERROR_ABORTED);
  EXPECT_EQ(synced[2].load(), OVERLAP_ERROR_ABORTED);
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(overlap_host_launch_error()),
            "rank 1: run-time check failed: a size of -1");
  EXPECT_EQ(guarded[1].load(), OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(reached.load(), 0);
}

TEST(GuardedCall, NestedGuardsReturnToTheInnermost) {
  struct State {
    overlap_context *ctx;
    overlap_status inner = OVERLAP_SUCCESS;
    bool after = false;
    std::atomic<int> reached{0};
  };
  overlap_host_options opts = quietOptions();
  overlap_status outer = OVERLAP_SUCCESS;
  State state;
  overlap_status status = launch(1, &opts, [&](overlap_context *ctx) {
    state.ctx = ctx;
    outer = overlap_context_call_guarded(
        ctx,
        [](void *p) {
          auto *s = static_cast<State *>(p);
          s->inner =
              overlap_context_call_guarded(s->ctx, failCheck, &s->reached);
          s->after = true; // the outer call goes on after the inner failed
        },
        &state);
  });
  EXPECT_EQ(state.inner, OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(state.after);
  EXPECT_EQ(outer, OVERLAP_SUCCESS);
  EXPECT_EQ(status, OVERLAP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(state.reached.load(), 0);
}

TEST(GuardedCall, NullArgumentsAreRefused) {
  overlap_host_options opts = quietOptions();
  launch(1, &opts, [&](overlap_context *ctx) {
    EXPECT_EQ(overlap_context_call_guarded(ctx, nullptr, nullptr),
              OVERLAP_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(overlap_context_call_guarded(nullptr, failCheck, nullptr),
              OVERLAP_ERROR_INVALID_ARGUMENT);
  });
}

TEST(GuardedCallDeathTest, OutsideAGuardACheckSaysWhyAndAborts) {
  EXPECT_DEATH(overlap_check_failed(kMessage, sizeof kMessage - 1),
               "overlap: run-time check failed: a size of -1");
}

} // namespace

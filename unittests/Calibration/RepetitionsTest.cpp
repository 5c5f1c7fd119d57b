//===- RepetitionsTest.cpp - The order of a timed window's repetitions ----===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Repetitions.h, recorded instead of run on CUDA: over several ranks the
// barrier is enqueued behind the gate and before the start event, and the
// gate opens only after the window's whole enqueue, so the barrier (and so
// the window) starts on the device once every rank has enqueued; the
// kernels of the window are launched once, ungated and untimed, before the
// first gated repetition.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/Repetitions.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace overlap::calibration;

namespace {

/// Records the steps: "sync", "gate", "barrier", "start", "work", "stop",
/// "open", "collect" or "collect timed".
class Recorder : public RepetitionSteps {
public:
  std::vector<std::string> calls;
  bool gateWorks = true;
  void synchronize() override { calls.push_back("sync"); }
  bool closeGate() override {
    calls.push_back("gate");
    return gateWorks;
  }
  void barrier() override { calls.push_back("barrier"); }
  void recordStart() override { calls.push_back("start"); }
  void enqueue() override { calls.push_back("work"); }
  void recordStop() override { calls.push_back("stop"); }
  void openGate() override { calls.push_back("open"); }
  void collect(bool timed) override {
    calls.push_back(timed ? "collect timed" : "collect");
  }
};

using Calls = std::vector<std::string>;

TEST(Repetitions, BarrierBehindTheGateAndBeforeTheWindow) {
  Recorder r;
  runRepetition(r, /*ranks=*/true, {/*gated=*/true, /*timed=*/true});
  // The barrier is enqueued on the start stream after the gate, so on the
  // device it runs after this rank's gate opened ("open", after the whole
  // enqueue) and completes only when every rank's has; the start event
  // follows it. (Before: sync, barrier, gate, start, ...: a rank whose host
  // finished first started its clock while another still enqueued.)
  EXPECT_EQ(r.calls, (Calls{"sync", "gate", "barrier", "start", "work", "stop",
                            "open", "collect timed"}));
}

TEST(Repetitions, OneRankHasNoBarrier) {
  Recorder r;
  runRepetition(r, false, {true, false});
  EXPECT_EQ(r.calls, (Calls{"sync", "gate", "start", "work", "stop", "open",
                            "collect"}));
}

TEST(Repetitions, NoGateNoOpening) {
  Recorder r;
  r.gateWorks = false;
  runRepetition(r, true, {true, true});
  EXPECT_EQ(r.calls, (Calls{"sync", "gate", "barrier", "start", "work", "stop",
                            "collect timed"}));
}

TEST(Repetitions, TheFirstRepetitionLoadsTheKernelsUngated) {
  for (int warmup : {0, 1, 5}) {
    SCOPED_TRACE(warmup);
    std::vector<Repetition> plan = repetitionPlan(warmup, 3, true);
    ASSERT_EQ(plan.size(), size_t(std::max(warmup, 1) + 3));
    // Untimed and ungated: the window's kernels load (lazily, at their
    // first launch) with no gate spinning on the device.
    EXPECT_FALSE(plan[0].gated);
    EXPECT_FALSE(plan[0].timed);
    size_t timed = 0;
    for (size_t i = 1; i < plan.size(); ++i) {
      EXPECT_TRUE(plan[i].gated) << i;
      timed += plan[i].timed;
    }
    EXPECT_EQ(timed, 3u);
    // The timed ones come last.
    for (size_t i = plan.size() - 3; i < plan.size(); ++i)
      EXPECT_TRUE(plan[i].timed);
  }
  // Every repetition enqueues the same work (one callback): the window's
  // kernels were all launched before the first gated repetition.
  Recorder r;
  runRepetitions(r, true, 0, 2);
  size_t firstGate = 0;
  while (firstGate < r.calls.size() && r.calls[firstGate] != "gate")
    ++firstGate;
  ASSERT_LT(firstGate, r.calls.size());
  size_t workBefore = 0;
  for (size_t i = 0; i < firstGate; ++i)
    workBefore += r.calls[i] == "work";
  EXPECT_EQ(workBefore, 1u);
  // ... in an untimed repetition.
  EXPECT_EQ(r.calls[firstGate - 2], "collect");
  EXPECT_EQ(r.calls[firstGate - 1], "sync");
}

TEST(Repetitions, NoGateAtAll) {
  std::vector<Repetition> plan = repetitionPlan(2, 2, false);
  for (const Repetition &r : plan)
    EXPECT_FALSE(r.gated);
}

} // namespace

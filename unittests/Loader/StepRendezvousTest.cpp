//===- StepRendezvousTest.cpp - Device calls of one step --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// StepRendezvous (lib/Loader/StepRendezvous.cpp), which joins a framework's
// per-device calls of a compiled layer into one launch: every rank's k-th
// call is step k, launched once with every rank's buffers; a missing rank
// fails the step for all its calls, naming it, at the timeout; a failed
// launch is every call's error.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/StepRendezvous.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

using overlap::exec::StepRendezvous;

namespace {

/// Each rank's input is one int; the launch writes, for each rank, the sum
/// of every rank's input plus its own rank.
StepRendezvous::Launch summing(std::atomic<int> &launches) {
  return
      [&launches](const std::vector<std::vector<const void *>> &in,
                  const std::vector<std::vector<void *>> &out, std::string &) {
        ++launches;
        int sum = 0;
        for (const auto &rank : in)
          sum += *static_cast<const int *>(rank[0]);
        for (size_t r = 0; r < out.size(); ++r)
          *static_cast<int *>(out[r][0]) = sum + static_cast<int>(r);
        return true;
      };
}

} // namespace

TEST(StepRendezvous, EachStepIsOneLaunchWithEveryRanksBuffers) {
  std::atomic<int> launches{0};
  StepRendezvous steps(4, 10000, summing(launches));
  constexpr int kSteps = 20;
  std::vector<std::vector<int>> got(4, std::vector<int>(kSteps, -1));
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      for (int k = 0; k < kSteps; ++k) {
        int input = 100 * k + r, output = -1;
        std::string error;
        // Ranks arrive in different orders from step to step.
        if ((k + r) % 3 == 0)
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        EXPECT_TRUE(steps.call(r, {&input}, {&output}, error)) << error;
        got[r][k] = output;
      }
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(launches.load(), kSteps);
  EXPECT_EQ(steps.launches(), kSteps);
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < kSteps; ++k)
      EXPECT_EQ(got[r][k], 400 * k + 6 + r) << "rank " << r << " step " << k;
}

TEST(StepRendezvous, AMissingRankFailsTheStepForEveryCallOfIt) {
  std::atomic<int> launches{0};
  StepRendezvous steps(3, 200, summing(launches));
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) // rank 2 never calls
    threads.emplace_back([&, r] {
      int input = r, output = 0;
      EXPECT_FALSE(steps.call(r, {&input}, {&output}, errors[r]));
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(launches.load(), 0);
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(errors[r].find("call 1 of this layer: rank"), std::string::npos)
        << errors[r];
  EXPECT_NE(errors[0].find("for rank 2, which did not call it"),
            std::string::npos)
      << errors[0];
  // Rank 2 coming late hears the same at once, without a launch.
  int input = 2, output = 0;
  std::string late;
  EXPECT_FALSE(steps.call(2, {&input}, {&output}, late));
  EXPECT_NE(late.find("which did not call it"), std::string::npos) << late;
  EXPECT_EQ(launches.load(), 0);
}

TEST(StepRendezvous, AFailedLaunchIsEveryCallsError) {
  StepRendezvous steps(2, 10000,
                       [](const std::vector<std::vector<const void *>> &,
                          const std::vector<std::vector<void *>> &,
                          std::string &error) {
                         error = "the program failed";
                         return false;
                       });
  std::vector<std::string> errors(2);
  std::thread other([&] { steps.call(1, {}, {}, errors[1]); });
  EXPECT_FALSE(steps.call(0, {}, {}, errors[0]));
  other.join();
  EXPECT_EQ(errors[0], "the program failed");
  EXPECT_EQ(errors[1], "the program failed");
  std::string bad;
  EXPECT_FALSE(steps.call(2, {}, {}, bad));
  EXPECT_EQ(bad, "rank 2 called a layer of 2 ranks");
}

TEST(StepRendezvous, ARankThatMissedAStepIsInStepInTheNextExecution) {
  // Execution 7: rank 1's execution stopped before its call (an earlier
  // call of it failed), so rank 0's call fails at the timeout. Execution 8:
  // both call, and the step runs. Counted over the layer's life, rank 1
  // stayed one call behind and every later step failed (issue 48).
  std::atomic<int> launches{0};
  StepRendezvous steps(2, 200, summing(launches));
  int input0 = 5, output0 = -1;
  std::string error;
  EXPECT_FALSE(steps.call(0, 7, {&input0}, {&output0}, error));
  EXPECT_NE(error.find("for rank 1, which did not call it"), std::string::npos)
      << error;
  for (int run = 8; run < 11; ++run) {
    std::vector<int> outputs(2, -1);
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        int input = 10 * run + r;
        EXPECT_TRUE(steps.call(r, run, {&input}, {&outputs[r]}, errors[r]))
            << "execution " << run << ", rank " << r << ": " << errors[r];
      });
    for (auto &t : threads)
      t.join();
    for (int r = 0; r < 2; ++r)
      EXPECT_EQ(outputs[r], 20 * run + 1 + r) << "execution " << run;
  }
  EXPECT_EQ(launches.load(), 3);
}

TEST(StepRendezvous, StepsOfOneExecutionAreCountedInIt) {
  // Two calls per execution on each rank: they pair up by their index in
  // the execution, whatever order the ranks come in.
  std::atomic<int> launches{0};
  StepRendezvous steps(2, 10000, summing(launches));
  std::vector<std::vector<int>> got(2, std::vector<int>(4, -1));
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      for (int k = 0; k < 4; ++k) {
        int input = 100 * k + r;
        std::string error;
        EXPECT_TRUE(steps.call(r, 40 + k / 2, {&input}, {&got[r][k]}, error))
            << error;
      }
    });
  for (auto &t : threads)
    t.join();
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(got[r][k], 200 * k + 1 + r) << "rank " << r << " call " << k;
  EXPECT_EQ(launches.load(), 4);
}

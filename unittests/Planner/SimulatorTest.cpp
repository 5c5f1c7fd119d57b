//===- SimulatorTest.cpp - Two-stream timeline tests -----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Simulator.h"

#include "llvm/Support/JSON.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <limits>
#include <random>

using namespace overlap::planner;

namespace {

constexpr double kEps = 1e-9;

PipelineSpec spec(std::vector<double> compute, std::vector<double> comm,
                  PipelineOrder order = PipelineOrder::ComputeThenComm,
                  double cComp = 1.0, double cComm = 1.0) {
  PipelineSpec s;
  s.computeUs = std::move(compute);
  s.commUs = std::move(comm);
  s.order = order;
  s.computeContention = cComp;
  s.commContention = cComm;
  return s;
}

TEST(Simulator, HandCheckedNoContention) {
  SimResult r = simulate(spec({2, 2, 2}, {3, 3, 3}));
  // GEMMs 0-2, 2-4, 4-6; comms 2-5, 5-8, 8-11.
  EXPECT_DOUBLE_EQ(r.task(Stream::Compute, 2).endUs, 6);
  EXPECT_DOUBLE_EQ(r.task(Stream::Comm, 0).startUs, 2);
  EXPECT_DOUBLE_EQ(r.task(Stream::Comm, 1).startUs, 5);
  EXPECT_DOUBLE_EQ(r.task(Stream::Comm, 2).endUs, 11);
  EXPECT_DOUBLE_EQ(r.makespanUs, 11);
  EXPECT_DOUBLE_EQ(r.computeWorkUs, 6);
  EXPECT_DOUBLE_EQ(r.commWorkUs, 9);
}

TEST(Simulator, HandCheckedContention) {
  // GEMM 0 alone 0-2; GEMM 1 and comm 0 share 2-5 at 1/1.5 speed; comm 1
  // alone 5-7.
  SimResult r =
      simulate(spec({2, 2}, {2, 2}, PipelineOrder::ComputeThenComm, 1.5, 1.5));
  EXPECT_DOUBLE_EQ(r.task(Stream::Compute, 1).endUs, 5);
  EXPECT_DOUBLE_EQ(r.task(Stream::Comm, 0).endUs, 5);
  EXPECT_DOUBLE_EQ(r.makespanUs, 7);
  EXPECT_NEAR(pipelineMakespan({2, 2}, {2, 2}, 1.5, 1.5), 7, kEps);
}

TEST(Simulator, HandCheckedUnequalContention) {
  // GEMM 1 (4 units) beside comm 0 (1 unit): comm slowed 2x ends at 3,
  // having let the GEMM do 2/1.2 units; the GEMM finishes its rest alone.
  SimResult r =
      simulate(spec({1, 4}, {1, 1}, PipelineOrder::ComputeThenComm, 1.2, 2.0));
  EXPECT_NEAR(r.task(Stream::Comm, 0).endUs, 3, kEps);
  double gemm1End = 3 + (4 - 2 / 1.2);
  EXPECT_NEAR(r.task(Stream::Compute, 1).endUs, gemm1End, kEps);
  EXPECT_NEAR(r.makespanUs, gemm1End + 1, kEps);
  EXPECT_NEAR(pipelineMakespan({1, 4}, {1, 1}, 1.2, 2.0), gemm1End + 1, kEps);
}

TEST(Simulator, AllGatherRunsCommFirst) {
  SimResult r = simulate(spec({3, 3}, {1, 1}, PipelineOrder::CommThenCompute));
  // Comms 0-1, 1-2; GEMMs 1-4, 4-7.
  EXPECT_DOUBLE_EQ(r.task(Stream::Comm, 1).endUs, 2);
  EXPECT_DOUBLE_EQ(r.task(Stream::Compute, 0).startUs, 1);
  EXPECT_DOUBLE_EQ(r.task(Stream::Compute, 1).startUs, 4);
  EXPECT_DOUBLE_EQ(r.makespanUs, 7);
}

TEST(Simulator, ZeroLengthTasks) {
  SimResult r = simulate(spec({2, 3}, {0, 0}));
  EXPECT_DOUBLE_EQ(r.makespanUs, 5);
  EXPECT_DOUBLE_EQ(r.task(Stream::Comm, 1).startUs, 5);
  SimResult empty = simulate(spec({}, {}));
  EXPECT_EQ(empty.makespanUs, 0);
}

/// The simulator ends whatever it is given: a nan-long task finishes where
/// it starts (finishPlan refuses such plans before they get here; the
/// fuzzer found a loop that never ended), an inf-long one at inf.
TEST(Simulator, NonFiniteTasksEnd) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  SimResult r = simulate(spec({nan, 2}, {1, nan}));
  EXPECT_DOUBLE_EQ(r.task(Stream::Compute, 0).endUs, 0);
  EXPECT_DOUBLE_EQ(r.makespanUs, 2); // GEMM 1 0-2 beside comm 0 0-1
  SimResult i = simulate(spec({inf, 2}, {1, 1}, PipelineOrder::ComputeThenComm,
                              1.5, 1.5));
  EXPECT_EQ(i.makespanUs, inf);
}

/// Random timelines: dependencies hold, makespan is bounded, and the
/// closed-form recurrence agrees with the event simulation.
TEST(Simulator, RandomInvariants) {
  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<double> dur(0.0, 100.0);
  std::uniform_real_distribution<double> cont(1.0, 1.6);
  std::uniform_int_distribution<int> tiles(1, 12);
  for (int trial = 0; trial < 500; ++trial) {
    int n = tiles(rng);
    std::vector<double> comp(n), comm(n);
    for (int i = 0; i < n; ++i) {
      comp[i] = dur(rng);
      comm[i] = dur(rng);
    }
    PipelineOrder order = trial % 2 ? PipelineOrder::CommThenCompute
                                    : PipelineOrder::ComputeThenComm;
    double cA = trial % 3 ? cont(rng) : 1.0, cB = trial % 3 ? cont(rng) : 1.0;
    SimResult r = simulate(spec(comp, comm, order, cA, cB));
    bool commFirst = order == PipelineOrder::CommThenCompute;
    Stream prod = commFirst ? Stream::Comm : Stream::Compute;
    Stream cons = commFirst ? Stream::Compute : Stream::Comm;
    double tol = 1e-9 * (r.makespanUs + 1);
    for (int i = 0; i < n; ++i) {
      const SimTask &p = r.task(prod, i), &c = r.task(cons, i);
      // No task starts before its dependencies end.
      EXPECT_GE(c.startUs, p.endUs - tol);
      if (i > 0) {
        EXPECT_GE(p.startUs, r.task(prod, i - 1).endUs - tol);
        EXPECT_GE(c.startUs, r.task(cons, i - 1).endUs - tol);
      }
      // A task never runs faster than uncontended nor slower than fully
      // contended.
      double maxC = std::max(cA, cB);
      EXPECT_GE(p.endUs - p.startUs, p.workUs - tol);
      EXPECT_GE(c.endUs - c.startUs, c.workUs - tol);
      EXPECT_LE(p.endUs - p.startUs, p.workUs * maxC + tol);
      EXPECT_LE(c.endUs - c.startUs, c.workUs * maxC + tol);
    }
    double sumC = r.computeWorkUs, sumD = r.commWorkUs;
    EXPECT_GE(r.makespanUs, std::max(sumC, sumD) - tol);
    EXPECT_LE(r.makespanUs, sumC + sumD + tol);
    const std::vector<double> &pw = commFirst ? comm : comp;
    const std::vector<double> &cw = commFirst ? comp : comm;
    double pc = commFirst ? cB : cA, cc = commFirst ? cA : cB;
    EXPECT_NEAR(pipelineMakespan(pw, cw, pc, cc), r.makespanUs, tol * 10);
    if (cA == 1.0 && cB == 1.0) {
      // Without contention: the classic flow-shop formula.
      double best = 0;
      for (int k = 0; k < n; ++k) {
        double s = 0;
        for (int i = 0; i <= k; ++i)
          s += pw[i];
        for (int i = k; i < n; ++i)
          s += cw[i];
        best = std::max(best, s);
      }
      EXPECT_NEAR(r.makespanUs, best, tol * 10);
    }
  }
}

TEST(Simulator, ChromeTraceIsValidJson) {
  SimResult r = simulate(spec({2, 2, 2}, {3, 3, 3}));
  std::string text = toChromeTrace(r, {128, 256, 128}, "test \"plan\"");
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(v)) << llvm::toString(v.takeError());
  const llvm::json::Array *events = v->getAsObject()->getArray("traceEvents");
  ASSERT_NE(events, nullptr);
  int slices = 0, meta = 0;
  for (const llvm::json::Value &e : *events) {
    const llvm::json::Object *o = e.getAsObject();
    ASSERT_NE(o, nullptr);
    std::optional<llvm::StringRef> ph = o->getString("ph");
    ASSERT_TRUE(ph.has_value());
    if (*ph == "M") {
      ++meta;
      continue;
    }
    EXPECT_EQ(*ph, "X");
    ++slices;
    std::optional<int64_t> tid = o->getInteger("tid");
    ASSERT_TRUE(tid.has_value());
    EXPECT_TRUE(*tid == 1 || *tid == 2);
    EXPECT_TRUE(o->getNumber("ts").has_value());
    EXPECT_GT(*o->getNumber("dur"), 0);
    if (*tid == 2 && o->getObject("args")->getInteger("tile") == 2) {
      EXPECT_DOUBLE_EQ(*o->getNumber("ts"), 8);
      EXPECT_EQ(*o->getString("name"), "comm 2 (128 rows)");
    }
  }
  EXPECT_EQ(slices, 6);
  EXPECT_EQ(meta, 3);
}

} // namespace

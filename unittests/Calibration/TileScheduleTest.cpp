//===- TileScheduleTest.cpp - The order a tiled pipeline is enqueued ------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// overlap-bench enqueues every tile's producer work, signal, wait and
// consumer work before the next tile's; the runner's steps are recorded here
// instead of calling the runtime.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/TileSchedule.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace overlap;
using namespace overlap::calibration;

namespace {

/// Records each step as "P3", "S3", "W3", "C3"; prepare, its signal and
/// wait as "R3", "r3", "w3"; the end as "D" (signal), "d" (wait), "F".
class Recorder : public TileSteps {
public:
  std::vector<std::string> calls;
  /// Tiles that cross no stream (a rank-major tile of the own block).
  std::vector<size_t> local;
  void produce(size_t t) override { add('P', t); }
  void signal(size_t t) override { add('S', t); }
  void wait(size_t t) override { add('W', t); }
  void consume(size_t t) override { add('C', t); }
  bool crosses(size_t t) const override {
    return std::find(local.begin(), local.end(), t) == local.end();
  }
  void prepare(size_t t) override { add('R', t); }
  void signalPrepared(size_t t) override { add('r', t); }
  void waitPrepared(size_t t) override { add('w', t); }
  void signalDone() override { calls.push_back("D"); }
  void waitDone() override { calls.push_back("d"); }
  void finish() override { calls.push_back("F"); }

  /// Position of a step, or -1.
  long at(char step, size_t t) const {
    std::string name = step + std::to_string(t);
    for (size_t i = 0; i < calls.size(); ++i)
      if (calls[i] == name)
        return long(i);
    return -1;
  }

private:
  void add(char step, size_t t) { calls.push_back(step + std::to_string(t)); }
};

TEST(TileSchedule, TileByTile) {
  Recorder r;
  enqueueInterleaved(3, r);
  EXPECT_EQ(r.calls,
            (std::vector<std::string>{"P0", "S0", "W0", "C0", "P1", "S1", "W1",
                                      "C1", "P2", "S2", "W2", "C2"}));
}

// What the schedule guarantees, for any tile count: every step once; each
// signal after its producer work and before its wait (legal for the event
// sync mode, whose waits must follow their signals); the consumer's work of
// tile t enqueued before the producer's work of tile t + 1 (the consumer is
// not queued behind all of the producer's tiles).
TEST(TileSchedule, SignalsPrecedeWaitsAndConsumersKeepUp) {
  for (size_t tiles : {size_t(1), size_t(2), size_t(7)}) {
    Recorder r;
    enqueueInterleaved(tiles, r);
    ASSERT_EQ(r.calls.size(), 4 * tiles);
    for (size_t t = 0; t < tiles; ++t) {
      for (char step : {'P', 'S', 'W', 'C'})
        ASSERT_GE(r.at(step, t), 0) << step << t;
      EXPECT_LT(r.at('P', t), r.at('S', t));
      EXPECT_LT(r.at('S', t), r.at('W', t));
      EXPECT_LT(r.at('W', t), r.at('C', t));
      if (t + 1 < tiles) {
        EXPECT_LT(r.at('C', t), r.at('P', t + 1));
      }
    }
  }
  Recorder none;
  enqueueInterleaved(0, none);
  EXPECT_TRUE(none.calls.empty());
}

TEST(TileSchedule, AllGatherGathersFirst) {
  EXPECT_TRUE(collectiveProduces(planner::Collective::AllGather));
  EXPECT_FALSE(collectiveProduces(planner::Collective::AllReduce));
  EXPECT_FALSE(collectiveProduces(planner::Collective::ReduceScatter));
}

// All-to-all dispatch as overlap-decompose + overlap-schedule-streams emit
// it: every tile's pack (compute stream) and its signal before any
// exchange, each exchange after the wait for its own pack's signal.
TEST(TileSchedule, DispatchPacksEveryTileFirst) {
  Recorder r;
  TileExtras extras;
  extras.prepareAll = true;
  enqueueTiles(3, extras, r);
  EXPECT_EQ(r.calls, (std::vector<std::string>{
                         "R0", "r0", "R1", "r1", "R2", "r2", "w0",
                         "P0", "S0", "W0", "C0", "w1", "P1", "S1",
                         "W1", "C1", "w2", "P2", "S2", "W2", "C2"}));
}

// A rank-major reduce-scatter over 3 ranks, one chunk: steps 1, 2, then 0
// (own block: GEMM only, no exchange, so no signal and no wait), then the
// comm stream's signal after the last exchange, the compute stream's wait
// for it and the sum.
TEST(TileSchedule, RankMajorReduceScatter) {
  Recorder r;
  r.local = {2};
  TileExtras extras;
  extras.finish = true;
  enqueueTiles(3, extras, r);
  EXPECT_EQ(r.calls,
            (std::vector<std::string>{"P0", "S0", "W0", "C0", "P1", "S1", "W1",
                                      "C1", "P2", "C2", "D", "d", "F"}));
}

// Rank-major all-gather: step 0 first (no exchange), then the shifts
// (producer) each signalling the GEMM (consumer) of its chunk.
TEST(TileSchedule, RankMajorAllGather) {
  Recorder r;
  r.local = {0, 1};
  enqueueTiles(4, TileExtras(), r);
  EXPECT_EQ(r.calls,
            (std::vector<std::string>{"P0", "C0", "P1", "C1", "P2", "S2", "W2",
                                      "C2", "P3", "S3", "W3", "C3"}));
  // Without extras and with every tile crossing: enqueueInterleaved.
  Recorder plain, interleaved;
  enqueueTiles(5, TileExtras(), plain);
  enqueueInterleaved(5, interleaved);
  EXPECT_EQ(plain.calls, interleaved.calls);
}

// Every signal precedes its wait (the event mode's rule) in every form.
TEST(TileSchedule, EveryFormSignalsBeforeItWaits) {
  for (bool prepare : {false, true})
    for (bool finish : {false, true}) {
      Recorder r;
      r.local = {1};
      TileExtras extras{prepare, finish};
      enqueueTiles(4, extras, r);
      for (size_t i = 0; i < r.calls.size(); ++i) {
        const std::string &c = r.calls[i];
        std::string signal = c[0] == 'W'   ? "S" + c.substr(1)
                             : c[0] == 'w' ? "r" + c.substr(1)
                             : c == "d"    ? "D"
                                           : "";
        if (signal.empty())
          continue;
        auto at = std::find(r.calls.begin(), r.calls.end(), signal);
        ASSERT_NE(at, r.calls.end()) << c;
        EXPECT_LT(size_t(at - r.calls.begin()), i) << c;
      }
      EXPECT_EQ(std::count(r.calls.begin(), r.calls.end(), "S1"), 0);
    }
}

} // namespace

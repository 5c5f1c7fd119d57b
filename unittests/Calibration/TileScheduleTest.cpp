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

#include <string>
#include <vector>

using namespace overlap;
using namespace overlap::calibration;

namespace {

/// Records each step as "P3", "S3", "W3", "C3".
class Recorder : public TileSteps {
public:
  std::vector<std::string> calls;
  void produce(size_t t) override { add('P', t); }
  void signal(size_t t) override { add('S', t); }
  void wait(size_t t) override { add('W', t); }
  void consume(size_t t) override { add('C', t); }

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

} // namespace

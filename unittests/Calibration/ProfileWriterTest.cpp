//===- ProfileWriterTest.cpp - Measurements into a Planner profile --------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/ProfileWriter.h"
#include "overlap/Planner/Ring.h"

#include "overlap/Planner/CostModel.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

using namespace overlap;
using namespace overlap::calibration;
using planner::Collective;

namespace {

CalibrationResult sample() {
  CalibrationResult r;
  r.name = "test";
  r.description = "overlap-calibrate on a test";
  r.provenance = "measured";
  r.deviceName = "GPU";
  r.smCount = 132;
  r.gemms.push_back(
      {8192, 3072, planner::DType::F16, 1, {128, 256, 384}, {10, 9, 30}});
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather, Collective::AllToAll})
    r.comms.push_back({c, 8, "stand-in", {65536, 131072}, {5, 8}});
  r.computeContention = 1.1;
  r.commContention = 1.2;
  return r;
}

TEST(ProfileWriter, MonotoneTable) {
  llvm::json::Array t = monotoneTable({1, 2, 3, 4}, {5, 3, 7, 6});
  ASSERT_EQ(t.size(), 4u);
  std::vector<double> ys;
  for (const llvm::json::Value &p : t)
    ys.push_back(*(*p.getAsArray())[1].getAsNumber());
  EXPECT_EQ(ys, (std::vector<double>{5, 5, 7, 7}));
  EXPECT_EQ(contentionFactor(12, 10), 1.2);
  EXPECT_EQ(contentionFactor(9, 10), 1.0);
  EXPECT_EQ(contentionFactor(9, 0), 1.0);
}

// The written profile loads, and the Planner prices with what was measured.
TEST(ProfileWriter, TheProfileLoads) {
  CalibrationResult r = sample();
  r.commSms = 16;
  llvm::Error e = checkProfileLoads(r);
  ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));
  auto profile = planner::parseProfile(profileJson(r), "test");
  ASSERT_TRUE(bool(profile)) << llvm::toString(profile.takeError());
  EXPECT_EQ(profile->device.smCount, 132);
  EXPECT_EQ(profile->device.commSms, 16);
  EXPECT_DOUBLE_EQ(profile->computeContention, 1.1);
  EXPECT_DOUBLE_EQ(profile->commContention, 1.2);
  ASSERT_EQ(profile->commCurves.size(), 4u);
  EXPECT_NE(profile->findCommCurve(Collective::AllToAll, 8), nullptr);
  planner::MatmulProblem problem{Collective::AllReduce, 256, 8192, 3072,
                                 planner::DType::F16,   8};
  auto model = planner::CostModel::create(*profile, problem);
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  // The running maximum: 10 at 256 rows, not the 9 measured.
  EXPECT_DOUBLE_EQ(model->gemmUs(256), 10.0);
}

// A context that ran its all-gathers on the copy engines writes
// device.zero_sm_all_gather, and the Planner then prices an all-gather
// without compute contention; other contexts leave the field out.
TEST(ProfileWriter, ZeroSmAllGather) {
  CalibrationResult r = sample();
  auto device = [](const CalibrationResult &result) {
    auto json = llvm::json::parse(profileJson(result));
    EXPECT_TRUE(bool(json)) << llvm::toString(json.takeError());
    return *json->getAsObject()->getObject("device");
  };
  EXPECT_FALSE(device(r).get("zero_sm_all_gather"));
  r.zeroSmAllGather = true;
  EXPECT_EQ(device(r).getBoolean("zero_sm_all_gather"), std::optional(true));
  llvm::Error e = checkProfileLoads(r);
  ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));
  auto profile = planner::parseProfile(profileJson(r), "test");
  ASSERT_TRUE(bool(profile)) << llvm::toString(profile.takeError());
  EXPECT_TRUE(profile->device.zeroSmAllGather);
  planner::MatmulProblem gather{Collective::AllGather, 256, 8192, 3072,
                                planner::DType::F16,   8};
  auto model = planner::CostModel::create(*profile, gather);
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  EXPECT_DOUBLE_EQ(model->getComputeContention(), 1.0);
  planner::MatmulProblem reduce{Collective::ReduceScatter, 256, 8192, 3072,
                                planner::DType::F16,       8};
  auto other = planner::CostModel::create(*profile, reduce);
  ASSERT_TRUE(bool(other)) << llvm::toString(other.takeError());
  EXPECT_DOUBLE_EQ(other->getComputeContention(), 1.1);
}

// Batched curves carry "batch": G, the Planner reads them back and prices
// a reduce-scatter tile of 8 ranks with them; a profile that is wrong for
// another reason fails the check.
TEST(ProfileWriter, BatchedCurves) {
  CalibrationResult r = sample();
  r.gemms.push_back({8192, 3072, planner::DType::F16, 8, {128, 256}, {12, 20}});
  auto json = llvm::json::parse(profileJson(r));
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  const llvm::json::Array *curves =
      json->getAsObject()->getObject("gemm")->getArray("curves");
  ASSERT_EQ(curves->size(), 2u);
  EXPECT_FALSE((*curves)[0].getAsObject()->get("batch"));
  EXPECT_EQ((*curves)[1].getAsObject()->getInteger("batch"), 8);
  llvm::Error e = checkProfileLoads(r);
  ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));
  auto profile = planner::parseProfile(profileJson(r), "test");
  ASSERT_TRUE(bool(profile)) << llvm::toString(profile.takeError());
  const planner::GemmCurve *batched =
      profile->findGemmCurve(8192, 3072, planner::DType::F16, 8);
  ASSERT_NE(batched, nullptr);
  EXPECT_DOUBLE_EQ(batched->curve.eval(256), 20.0);

  CalibrationResult bad = r;
  bad.comms[0].bytes = {65536, 65536}; // x must increase
  e = checkProfileLoads(bad);
  EXPECT_TRUE(bool(e));
  llvm::consumeError(std::move(e));
}

TEST(ProfileWriter, Sizes) {
  EXPECT_EQ(gemmCurveRows(128, 512),
            (std::vector<int64_t>{128, 256, 384, 512}));
  EXPECT_EQ(gemmCurveRows(128, 640, 3), (std::vector<int64_t>{384}));
  EXPECT_EQ(gemmCurveRows(128, 100), (std::vector<int64_t>{}));
  EXPECT_EQ(commCurveSizes(256 << 10),
            (std::vector<int64_t>{64 << 10, 128 << 10, 256 << 10}));
  // The sweep's smallest sizes join the grid, once, up to the largest.
  EXPECT_EQ(commCurveSizes(256 << 10, {96 << 10, 128 << 10, 512 << 10}),
            (std::vector<int64_t>{64 << 10, 96 << 10, 128 << 10, 256 << 10}));
  // M = 128 rows of bf16: N for all-reduce and reduce-scatter, K for
  // all-gather, both for all-to-all.
  const std::vector<std::pair<int64_t, int64_t>> nks = {{8192, 3072},
                                                        {28672, 1024}};
  EXPECT_EQ(sweepCommSizes(Collective::AllReduce, nks, 128, 2),
            (std::vector<int64_t>{2 << 20, 7 << 20}));
  EXPECT_EQ(sweepCommSizes(Collective::AllGather, nks, 128, 2),
            (std::vector<int64_t>{256 << 10, 768 << 10}));
  EXPECT_EQ(sweepCommSizes(Collective::AllToAll, nks, 128, 2),
            (std::vector<int64_t>{256 << 10, 768 << 10, 2 << 20, 7 << 20}));
  // NCCL moves whole elements, per rank for reduce-scatter and all-gather.
  EXPECT_EQ(ncclMovedBytes(Collective::AllReduce, 1001, 2, 8), 1000);
  EXPECT_EQ(ncclMovedBytes(Collective::ReduceScatter, 1001, 2, 8), 992);
  EXPECT_EQ(ncclMovedBytes(Collective::AllGather, 15, 2, 8), 0);
  // All-to-all: one whole-element block per peer.
  EXPECT_EQ(ncclMovedBytes(Collective::AllToAll, 1001, 2, 8), 992);
  EXPECT_EQ(ncclMovedBytes(Collective::AllToAll, 15, 2, 8), 0);
  // The copy-engine stand-in moves what one rank sends: all but its block.
  EXPECT_EQ(planner::ringWireBytes(Collective::AllToAll, 8, 992), 868);
}

// A stand-in leg with a known per-call latency: each size costs L plus the
// ring's wire bytes at a fixed bandwidth, with +-2 % of noise. The fit from
// the sweep's smallest size (M = 128 rows) gives L back, the written
// profile prices every measured size at its measured time, and another
// group size scales the transfer only.
TEST(ProfileWriter, FitsThePerCallLatency) {
  const double latency = 7.5, usPerWireMiB = 2.9; // ~360 GB/s
  const std::vector<std::pair<int64_t, int64_t>> nks = {
      {8192, 3072}, {8192, 3584}, {28672, 1024}, {4096, 16384}};
  CalibrationResult r = sample();
  r.comms.clear();
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather, Collective::AllToAll}) {
    const std::vector<int64_t> smallest = sweepCommSizes(c, nks, 128, 2);
    MeasuredComm m{c, 8, "synthetic stand-in", {}, {}};
    int i = 0;
    for (int64_t size : commCurveSizes(int64_t(256) << 20, smallest)) {
      const double wireMiB =
          double(planner::ringWireBytes(c, 8, size)) / double(1 << 20);
      const double noise = 1 + 0.02 * ((i++ % 3) - 1);
      m.bytes.push_back(double(size));
      m.us.push_back((latency + usPerWireMiB * wireMiB) * noise);
    }
    m.latencyUs = fitCommLatency(m.bytes, m.us, double(smallest[0]));
    EXPECT_NEAR(m.latencyUs, latency, 0.6) << planner::toString(c).str();
    r.comms.push_back(std::move(m));
  }
  auto profile = planner::parseProfile(profileJson(r), "test");
  ASSERT_TRUE(bool(profile)) << llvm::toString(profile.takeError());
  const MeasuredComm &ag = r.comms[2];
  const planner::CommCurve *curve =
      profile->findCommCurve(Collective::AllGather, 8);
  ASSERT_NE(curve, nullptr);
  EXPECT_DOUBLE_EQ(curve->latencyUs, ag.latencyUs);
  // M = 128 rows of K = 3072, 2-byte elements: 768 KiB gathered, priced
  // as measured.
  for (int64_t ranks : {8, 4}) {
    planner::MatmulProblem problem{Collective::AllGather, 128,  8192, 3072,
                                   planner::DType::F16,   ranks};
    auto model = planner::CostModel::create(*profile, problem);
    ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
    size_t at = 0;
    while (at < ag.bytes.size() && ag.bytes[at] != double(768 << 10))
      ++at;
    ASSERT_LT(at, ag.bytes.size());
    // Over 4 ranks the transfer scales by (3/4) / (7/8); the latency not.
    const double scale = ranks == 8 ? 1.0 : (3.0 / 4) / (7.0 / 8);
    EXPECT_NEAR(model->commUs(128),
                ag.latencyUs + (ag.us[at] - ag.latencyUs) * scale, 1e-9);
  }
  // Too few points in the window, or none: no latency.
  EXPECT_EQ(fitCommLatency({65536}, {5}, 65536), 0.0);
  EXPECT_EQ(fitCommLatency({65536, 131072}, {5, 8}, 1 << 30), 0.0);
  // A line through the origin fits none; a steep intercept is clamped to
  // the smallest time measured, so the curve less it stays >= 0.
  EXPECT_NEAR(fitCommLatency({1 << 20, 2 << 20}, {10, 20}, 1 << 20), 0.0,
              1e-12);
  EXPECT_EQ(fitCommLatency({65536, 1 << 20, 2 << 20}, {3, 40, 41}, 1 << 20),
            3.0);
}

} // namespace

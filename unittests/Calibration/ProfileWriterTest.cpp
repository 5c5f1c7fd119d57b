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

} // namespace

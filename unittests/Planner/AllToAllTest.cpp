//===- AllToAllTest.cpp - Expert-parallel all-to-all plans ------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// An all-to-all's tiles take the same share of every rank's block as
// all-gather and reduce-scatter tiles do, its GEMM tiles are the same
// batched GEMMs, and one rank's send buffer scales with the group like a
// ring all-gather's. So on a profile whose all-to-all curve equals its
// all-gather and reduce-scatter curves (the datasheet's), dispatch must plan
// exactly like all-gather and combine exactly like reduce-scatter, under
// every strategy.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Json.h"
#include "overlap/Planner/Ring.h"
#include "overlap/Planner/TilePlanner.h"

#include "TestHelpers.h"

#include "llvm/Support/JSON.h"
#include "gtest/gtest.h"

#include <limits>

#include <numeric>

using namespace overlap::planner;
using namespace overlap::planner::testing_helpers;

namespace {

std::string shipped(llvm::StringRef name) {
  return std::string(OVERLAP_PROFILES_DIR) + "/" + name.str() + ".json";
}

MatmulProblem allToAll(AllToAllSide side, int64_t m, int64_t ranks = 8) {
  MatmulProblem pb{Collective::AllToAll, m, 8192, 3072, DType::BF16, ranks};
  pb.side = side;
  return pb;
}

TEST(AllToAll, ParsesAndPrints) {
  EXPECT_EQ(parseCollective("all-to-all"), Collective::AllToAll);
  EXPECT_EQ(toString(Collective::AllToAll), "all-to-all");
  EXPECT_EQ(parseAllToAllSide("dispatch"), AllToAllSide::Dispatch);
  EXPECT_EQ(parseAllToAllSide("combine"), AllToAllSide::Combine);
  EXPECT_EQ(parseAllToAllSide("all-to-all"), std::nullopt);
  EXPECT_EQ(describeCollective(allToAll(AllToAllSide::Combine, 1024)),
            "all-to-all (combine)");
  EXPECT_TRUE(exchangesInput(allToAll(AllToAllSide::Dispatch, 1024)));
  EXPECT_FALSE(exchangesInput(allToAll(AllToAllSide::Combine, 1024)));
}

TEST(AllToAll, ShippedProfilesHaveACurve) {
  for (const char *name : {"h100-nvlink-datasheet", "mc2-example"}) {
    OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped(name)));
    EXPECT_NE(p.findCommCurve(Collective::AllToAll, 8), nullptr) << name;
  }
}

TEST(AllToAll, SendsAllButTheLocalBlock) {
  for (int64_t g : {1, 2, 3, 8, 64}) {
    RingShare s = ringShare(Collective::AllToAll, g);
    EXPECT_DOUBLE_EQ(s.value(), g <= 1 ? 0.0 : double(g - 1) / double(g));
    // G blocks of 1000 bytes: all but one leave the rank.
    EXPECT_EQ(ringWireBytes(Collective::AllToAll, g, g * 1000),
              g <= 1 ? 0 : (g - 1) * 1000);
  }
}

TEST(AllToAll, PricesTheExchangedSide) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  OVERLAP_ASSIGN_OR_FAIL(
      dispatch, CostModel::create(p, allToAll(AllToAllSide::Dispatch, 4096)));
  OVERLAP_ASSIGN_OR_FAIL(
      combine, CostModel::create(p, allToAll(AllToAllSide::Combine, 4096)));
  // Dispatch moves the tokens (K wide), combine the GEMM's output (N wide).
  EXPECT_DOUBLE_EQ(dispatch.commBytes(1024), 1024.0 * 3072 * 2);
  EXPECT_DOUBLE_EQ(combine.commBytes(1024), 1024.0 * 8192 * 2);
  EXPECT_EQ(dispatch.getOrder(), PipelineOrder::CommThenCompute);
  EXPECT_EQ(combine.getOrder(), PipelineOrder::ComputeThenComm);
  // Per-rank tiles: batched GEMMs, tile rows a multiple of the group.
  EXPECT_EQ(dispatch.getTileGemmPricing(), TileGemmPricing::TileQuantized);
  EXPECT_EQ(dispatch.getAlignment(), 128);
  EXPECT_TRUE(dispatch.describeCommSource().find("all-to-all curve, 8 ranks") !=
              std::string::npos)
      << dispatch.describeCommSource();

  // At 4 ranks the curve measured at 8 is scaled by (3/4) / (7/8).
  OVERLAP_ASSIGN_OR_FAIL(
      four, CostModel::create(p, allToAll(AllToAllSide::Combine, 4096, 4)));
  const CommCurve *curve = p.findCommCurve(Collective::AllToAll, 8);
  double x = four.commBytes(1024) / curve->bytesPerUnit;
  EXPECT_DOUBLE_EQ(four.commUs(1024),
                   curve->curve.eval(x) * (0.75 / 0.875) + curve->latencyUs);
  EXPECT_EQ(four.getAlignment(), 128);
}

TEST(AllToAll, TokensMustDivideByTheGroup) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  std::string e =
      errorOf(CostModel::create(p, allToAll(AllToAllSide::Dispatch, 1001, 8)));
  EXPECT_NE(e.find("all-to-all needs M divisible by the group size"),
            std::string::npos)
      << e;
}

TEST(AllToAll, PlansLikeTheCollectiveOfTheSameSide) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  const struct {
    AllToAllSide side;
    Collective twin;
  } sides[] = {{AllToAllSide::Dispatch, Collective::AllGather},
               {AllToAllSide::Combine, Collective::ReduceScatter}};
  for (int64_t ranks : {2, 3, 8})
    for (const auto &s : sides)
      for (const char *strategy :
           {"none", "uniform:3", "mc2", "optimal", "waves", "ficco", "auto"}) {
        MatmulProblem pb = allToAll(s.side, ranks * 2048, ranks);
        MatmulProblem twin = pb;
        twin.collective = s.twin;
        std::string what = describeCollective(pb) + " " + strategy + " ranks " +
                           std::to_string(ranks);
        auto plan = planTiles(p, pb, strategy);
        auto twinPlan = planTiles(p, twin, strategy);
        ASSERT_EQ(bool(plan), bool(twinPlan)) << what;
        if (!plan) {
          // Only FlashOverlap's waves refuse, for the side feeding the GEMM.
          EXPECT_EQ(std::string(strategy), "waves") << what;
          EXPECT_EQ(s.side, AllToAllSide::Dispatch) << what;
          std::string e = llvm::toString(plan.takeError());
          EXPECT_NE(e.find("all-to-all (dispatch) feeds the GEMM's input"),
                    std::string::npos)
              << e;
          llvm::consumeError(twinPlan.takeError());
          continue;
        }
        // All-to-all has no rank-major tiles: where auto chose them for the
        // twin, it plans like the twin's best interleaved candidate.
        if (twinPlan->layout == TileOrder::RankMajor) {
          ASSERT_EQ(std::string(strategy), "auto") << what;
          double best = std::numeric_limits<double>::infinity();
          for (const Candidate &c : twinPlan->candidates)
            if (c.ok && c.strategy != "rank-major")
              best = std::min(best, c.predictedUs);
          // (Unless that one is within the margin: then one tile.)
          double serial = plan->serialUs;
          if (!(serial - best > p.getPredictionMargin(pb.collective) * serial))
            best = serial;
          EXPECT_EQ(plan->predictedUs, best) << what;
          EXPECT_EQ(plan->layout, TileOrder::Interleaved) << what;
          continue;
        }
        EXPECT_EQ(plan->tiles, twinPlan->tiles) << what;
        EXPECT_EQ(plan->strategy, twinPlan->strategy) << what;
        EXPECT_EQ(plan->computeUs, twinPlan->computeUs) << what;
        EXPECT_EQ(plan->commUs, twinPlan->commUs) << what;
        EXPECT_EQ(plan->predictedUs, twinPlan->predictedUs) << what;
        EXPECT_EQ(
            std::accumulate(plan->tiles.begin(), plan->tiles.end(), int64_t{0}),
            pb.m)
            << what;
        for (int64_t rows : plan->tiles)
          EXPECT_EQ(rows % ranks, 0) << what;
      }
}

TEST(AllToAll, PlanFromJSON) {
  OVERLAP_ASSIGN_OR_FAIL(
      text, planFromJSON(R"({"collective": "all-to-all", "side": "combine",
                             "m": 4096, "n": 8192, "k": 3072, "ranks": 8,
                             "profile": "h100-nvlink-datasheet",
                             "strategy": "uniform:4"})"));
  llvm::Expected<llvm::json::Value> doc = llvm::json::parse(text);
  ASSERT_TRUE(bool(doc)) << llvm::toString(doc.takeError());
  const llvm::json::Object *problem = doc->getAsObject()->getObject("problem");
  ASSERT_NE(problem, nullptr) << text;
  EXPECT_EQ(problem->getString("collective"), "all-to-all");
  EXPECT_EQ(problem->getString("side"), "combine");

  std::string e = errorOf(planFromJSON(
      R"({"collective": "all-gather", "side": "combine", "m": 4096,
          "n": 8192, "k": 3072, "ranks": 8})"));
  EXPECT_NE(e.find("\"side\": expected dispatch or combine with "
                   "\"collective\": \"all-to-all\""),
            std::string::npos)
      << e;
  e = errorOf(planFromJSON(
      R"({"collective": "all-to-all", "side": "both", "m": 4096,
          "n": 8192, "k": 3072, "ranks": 8})"));
  EXPECT_NE(e.find("got 'both'"), std::string::npos) << e;
}

/// With E experts per rank, M is ranks x experts blocks: tiles divide by
/// both, and a tile's GEMM is E GEMMs of its rows / E.
TEST(AllToAll, ExpertsAlignAndPrice) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  MatmulProblem pb = allToAll(AllToAllSide::Combine, 4096, 4);
  pb.experts = 2;
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, pb));
  EXPECT_EQ(model.getAlignment() % 8, 0);
  EXPECT_DOUBLE_EQ(model.fullGemmUs(), 2 * model.contiguousGemmUs(2048));
  EXPECT_DOUBLE_EQ(model.gemmUs(4096), 2 * model.contiguousGemmUs(2048));
  EXPECT_DOUBLE_EQ(model.serialUs(), model.fullGemmUs() + model.commUs(4096));
  for (const char *strategy :
       {"mc2", "optimal", "waves", "ficco", "uniform:3", "auto"}) {
    OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(p, pb, strategy));
    for (int64_t t : plan.tiles)
      EXPECT_EQ(t % 8, 0) << strategy;
  }
  pb.m = 4100; // divisible by 4 ranks, not by 4 x 2 blocks
  std::string e = errorOf(CostModel::create(p, pb));
  EXPECT_NE(e.find("needs M divisible by ranks x experts"), std::string::npos)
      << e;
  MatmulProblem gather{Collective::AllGather, 4096, 8192, 3072, DType::BF16, 4};
  gather.experts = 2;
  e = errorOf(CostModel::create(p, gather));
  EXPECT_NE(e.find("only all-to-all has experts"), std::string::npos) << e;
  e = errorOf(planFromJSON(
      R"({"collective": "all-to-all", "experts": 0, "m": 4096,
          "n": 8192, "k": 3072, "ranks": 8})"));
  EXPECT_NE(e.find("\"experts\": expected a positive integer"),
            std::string::npos)
      << e;
}

} // namespace

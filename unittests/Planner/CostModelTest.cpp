//===- CostModelTest.cpp - Pricing the tiles that run ----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Reduce-scatter and all-gather tiles smaller than M run as one
// strided-batched GEMM of G matrices; these tests check that the model
// prices them so (batch curve, tile quantization, unbatched approximation)
// and every other GEMM as one call.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/CostModel.h"
#include "overlap/Planner/TilePlanner.h"

#include "TestHelpers.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace overlap::planner;
using namespace overlap::planner::testing_helpers;

namespace {

std::string shipped(llvm::StringRef name) {
  return std::string(OVERLAP_PROFILES_DIR) + "/" + name.str() + ".json";
}

/// N = K = 8192 f16. GEMM: `perRow` µs per row plus `latency` per call.
/// Every collective: 0.25 µs per row of the tile, measured at 8 ranks. No
/// contention, so that timelines can be worked out by hand.
Profile linearProfile(double perRow, double latency) {
  // x = rows of an f16 row of 8192.
  Profile p = linearCurvesProfile(8192, 8192, perRow, 8192.0 * 2, 0, 0.25);
  p.gemmLatencyUs = latency;
  p.computeContention = p.commContention = 1.0;
  return p;
}

/// Adds a batch-`batch` GEMM curve of `perRow` µs per (total) row.
void addBatchCurve(Profile &p, int64_t batch, double perRow) {
  GemmCurve g = p.gemmCurves.front();
  g.batch = batch;
  g.curve = Curve::piecewise({{0, INFINITY, {0, perRow}}});
  p.gemmCurves.push_back(g);
}

MatmulProblem problem(Collective c, int64_t m, int64_t ranks = 8) {
  return MatmulProblem{c, m, 8192, 8192, DType::F16, ranks};
}

bool contains(const std::string &s, llvm::StringRef part) {
  return s.find(part.str()) != std::string::npos;
}

/// Two GEMM curves for (1024, 512, f16), batch 1 and `batchField`.
std::string batchProfileText(const std::string &batchField) {
  return R"({
    "gemm": {"curves": [
      {"n": 1024, "k": 512, "dtype": "f16",
       "curve": {"table": [[0, 0], [1024, 100]]}},
      {"n": 1024, "k": 512, "dtype": "f16", )" +
         batchField + R"(,
       "curve": {"table": [[0, 0], [1024, 150]]}}]},
    "collectives": {"reduce-scatter": [{"ranks": 8, "x_unit": "MiB",
                    "curve": {"table": [[0, 0], [1, 10]]}}]}})";
}

TEST(CostModel, BatchCurvesAreFoundByExactBatch) {
  OVERLAP_ASSIGN_OR_FAIL(
      p, parseProfile(batchProfileText(R"("batch": 8)"), "t.json"));
  const GemmCurve *one = p.findGemmCurve(1024, 512, DType::F16);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->batch, 1);
  EXPECT_DOUBLE_EQ(one->curve.eval(1024), 100);
  EXPECT_EQ(p.findGemmCurve(1024, 512, DType::F16, 1), one);
  const GemmCurve *eight = p.findGemmCurve(1024, 512, DType::F16, 8);
  ASSERT_NE(eight, nullptr);
  EXPECT_EQ(eight->batch, 8);
  EXPECT_DOUBLE_EQ(eight->curve.eval(1024), 150);
  EXPECT_EQ(p.findGemmCurve(1024, 512, DType::F16, 4), nullptr);
  // "batch": 1 is the default spelled out, so it repeats the first entry.
  std::string e =
      errorOf(parseProfile(batchProfileText(R"("batch": 1)"), "bad.json"));
  EXPECT_TRUE(contains(e, "bad.json: gemm.curves[1]: expected one curve per "
                          "(n, k, dtype, batch)"))
      << e;
}

TEST(CostModel, MalformedBatchIsRejected) {
  struct Case {
    const char *field;
    const char *message;
  } cases[] = {
      {R"("batch": 0)",
       "bad.json: gemm.curves[1].batch: expected an integer >= 1 and <= "
       "65536, got 0"},
      {R"("batch": -8)",
       "bad.json: gemm.curves[1].batch: expected an integer >= 1 and <= "
       "65536, got -8"},
      {R"("batch": 2.5)",
       "bad.json: gemm.curves[1].batch: expected an integer >= 1"},
      {R"("batch": "8")",
       "bad.json: gemm.curves[1].batch: expected an integer >= 1"},
      {R"("batches": 8)", "bad.json: gemm.curves[1].batches: expected no "
                          "such field (known fields: n, k, dtype, batch, "
                          "curve, note)"},
  };
  for (const Case &c : cases) {
    std::string e =
        errorOf(parseProfile(batchProfileText(c.field), "bad.json"));
    EXPECT_TRUE(contains(e, c.message)) << c.field << ": " << e;
  }
}

TEST(CostModel, BatchCurvePricesPartialReduceScatterAndAllGatherTiles) {
  Profile p = linearProfile(0.5, 2);
  addBatchCurve(p, 8, 0.75);
  for (Collective c : {Collective::ReduceScatter, Collective::AllGather}) {
    OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, problem(c, 4096)));
    EXPECT_EQ(model.getTileGemmPricing(), TileGemmPricing::BatchedCurve);
    EXPECT_DOUBLE_EQ(model.gemmUs(1024), 0.75 * 1024 + 2);
    EXPECT_DOUBLE_EQ(model.contiguousGemmUs(1024), 0.5 * 1024 + 2);
    // The whole of M is one GEMM, and so are serial and ideal.
    EXPECT_DOUBLE_EQ(model.gemmUs(4096), 0.5 * 4096 + 2);
    EXPECT_DOUBLE_EQ(model.serialUs(), 0.5 * 4096 + 2 + 0.25 * 4096);
    EXPECT_DOUBLE_EQ(model.idealUs(), 0.5 * 4096 + 2);
    // Separate calls (FiCCO's unfused schedules) are each one GEMM.
    EXPECT_DOUBLE_EQ(model.gemmUs(1024, 8), 8 * (0.5 * 128 + 2));
    EXPECT_TRUE(contains(model.describeGemmSource(),
                         "batched curve N=8192 K=8192 f16 batch 8"))
        << model.describeGemmSource();

    OVERLAP_ASSIGN_OR_FAIL(
        plan, evaluateTiles(p, problem(c, 4096), {1024, 1024, 1024, 1024}));
    for (double us : plan.computeUs)
      EXPECT_DOUBLE_EQ(us, 0.75 * 1024 + 2);
    OVERLAP_ASSIGN_OR_FAIL(whole, evaluateTiles(p, problem(c, 4096), {4096}));
    EXPECT_DOUBLE_EQ(whole.computeUs[0], 0.5 * 4096 + 2);
    EXPECT_DOUBLE_EQ(whole.predictedUs, whole.serialUs);
  }

  // All-reduce tiles are rows of C: one GEMM each, whatever the profile.
  OVERLAP_ASSIGN_OR_FAIL(
      ar, CostModel::create(p, problem(Collective::AllReduce, 4096)));
  EXPECT_EQ(ar.getTileGemmPricing(), TileGemmPricing::Contiguous);
  EXPECT_DOUBLE_EQ(ar.gemmUs(1024), 0.5 * 1024 + 2);
  EXPECT_EQ(ar.describeGemmSource(), "curve N=8192 K=8192 f16");
  OVERLAP_ASSIGN_OR_FAIL(arPlan,
                         evaluateTiles(p, problem(Collective::AllReduce, 4096),
                                       {1024, 1024, 1024, 1024}));
  for (double us : arPlan.computeUs)
    EXPECT_DOUBLE_EQ(us, 0.5 * 1024 + 2);

  // One rank: a batch of one matrix is one GEMM.
  OVERLAP_ASSIGN_OR_FAIL(
      single,
      CostModel::create(p, problem(Collective::ReduceScatter, 4096, 1)));
  EXPECT_EQ(single.getTileGemmPricing(), TileGemmPricing::Contiguous);
  EXPECT_DOUBLE_EQ(single.gemmUs(1024), 0.5 * 1024 + 2);

  // Four ranks: the batch-8 curve does not apply, and without
  // device.gemm_tile nothing corrects the one-GEMM price.
  OVERLAP_ASSIGN_OR_FAIL(
      four, CostModel::create(p, problem(Collective::ReduceScatter, 4096, 4)));
  EXPECT_EQ(four.getTileGemmPricing(), TileGemmPricing::UnbatchedApproximation);
  EXPECT_DOUBLE_EQ(four.gemmUs(1024), 0.5 * 1024 + 2);
  EXPECT_TRUE(contains(four.describeGemmSource(),
                       "unbatched approximation, one GEMM of the tile's rows "
                       "(no batch-4 curve, no device.gemm_tile)"))
      << four.describeGemmSource();
}

TEST(CostModel, TileQuantizedFallbackHandComputed) {
  // 0.5 µs per row, 128-row output tiles, 8 ranks, M = 2048.
  Profile p = linearProfile(0.5, 0);
  p.device.gemmTile = {{128, 256}};
  OVERLAP_ASSIGN_OR_FAIL(
      rs, CostModel::create(p, problem(Collective::ReduceScatter, 2048)));
  EXPECT_EQ(rs.getTileGemmPricing(), TileGemmPricing::TileQuantized);
  EXPECT_TRUE(contains(rs.describeGemmSource(),
                       "tile-quantized, one GEMM of 8 x ceil(rows/8 / 128) x "
                       "128 rows (no batch-8 curve)"))
      << rs.describeGemmSource();
  // 512 rows = 8 x 64: 8 row tiles, as many as 1024 rows in one GEMM.
  EXPECT_DOUBLE_EQ(rs.gemmUs(512), 0.5 * 1024);
  // 1536 rows = 8 x 192: 8 x 2 row tiles = 2048 rows.
  EXPECT_DOUBLE_EQ(rs.gemmUs(1536), 0.5 * 2048);
  // 1024 rows = 8 x 128: no padding.
  EXPECT_DOUBLE_EQ(rs.gemmUs(1024), 0.5 * 1024);
  // The whole of M is one GEMM of 2048 rows.
  EXPECT_DOUBLE_EQ(rs.gemmUs(2048), 0.5 * 2048);
  // Never below the one-GEMM price, and larger tiles never cost less.
  double prev = 0;
  for (int64_t rows = 8; rows < 2048; rows += 8) {
    EXPECT_GE(rs.gemmUs(rows), rs.contiguousGemmUs(rows)) << rows;
    EXPECT_GE(rs.gemmUs(rows), prev) << rows;
    prev = rs.gemmUs(rows);
  }

  // Tiles {512, 1536}: GEMMs 0-512 and 512-1536; reduce-scatters of 128 µs
  // at 512-640 and of 384 µs at 1536-1920.
  OVERLAP_ASSIGN_OR_FAIL(
      plan,
      evaluateTiles(p, problem(Collective::ReduceScatter, 2048), {512, 1536}));
  EXPECT_EQ(plan.computeUs, (std::vector<double>{512, 1024}));
  EXPECT_EQ(plan.commUs, (std::vector<double>{128, 384}));
  EXPECT_DOUBLE_EQ(plan.predictedUs, 1920);
  EXPECT_DOUBLE_EQ(plan.serialUs, 1024 + 512);
  // All-gather runs the mirror image {1536, 512}: gathers 0-384 and
  // 384-512, GEMMs 384-1408 and 1408-1920.
  OVERLAP_ASSIGN_OR_FAIL(
      ag, evaluateTiles(p, problem(Collective::AllGather, 2048), {1536, 512}));
  EXPECT_EQ(ag.computeUs, (std::vector<double>{1024, 512}));
  EXPECT_DOUBLE_EQ(ag.predictedUs, 1920);

  // Without device.gemm_tile the same tiles are priced as one GEMM each:
  // GEMMs 0-256 and 256-1024, reduce-scatters 256-384 and 1024-1408.
  p.device.gemmTile.reset();
  OVERLAP_ASSIGN_OR_FAIL(
      approx,
      evaluateTiles(p, problem(Collective::ReduceScatter, 2048), {512, 1536}));
  EXPECT_DOUBLE_EQ(approx.predictedUs, 1408);
}

TEST(CostModel, DatasheetProfileQuantizesPerRankTiles) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  for (Collective c : {Collective::ReduceScatter, Collective::AllGather}) {
    MatmulProblem pb{c, 16384, 8192, 3072, DType::BF16, 8};
    OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, pb));
    EXPECT_EQ(model.getTileGemmPricing(), TileGemmPricing::TileQuantized);
    // 128-row tiles of 8 ranks: 16 rows per rank, one 128-row tile each.
    EXPECT_DOUBLE_EQ(model.gemmUs(128), model.contiguousGemmUs(1024));
    EXPECT_DOUBLE_EQ(model.gemmUs(16384), model.contiguousGemmUs(16384));
    for (const char *strategy : {"mc2", "optimal", "uniform:4", "ficco"}) {
      OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(p, pb, strategy));
      EXPECT_DOUBLE_EQ(plan.serialUs,
                       model.contiguousGemmUs(16384) + model.commUs(16384));
      for (size_t i = 0; i < plan.tiles.size(); ++i)
        EXPECT_DOUBLE_EQ(plan.computeUs[i],
                         model.gemmUs(plan.tiles[i], plan.gemmCallsPerTile))
            << strategy << " tile " << i;
    }
  }
  // FlashOverlap's waves are one kernel over all of M.
  MatmulProblem rs{Collective::ReduceScatter, 4096, 8192, 3072, DType::F16, 8};
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, rs));
  OVERLAP_ASSIGN_OR_FAIL(waves, planTiles(p, rs, "waves"));
  // 1024 output tiles on 132 SMs: 8 full-machine waves.
  EXPECT_NEAR(waves.waves->waveUs * 8, model.contiguousGemmUs(4096), 1e-9);
}

} // namespace

//===----------------------------------------------------------------------===//
// Zero-SM all-gather
//===----------------------------------------------------------------------===//

TEST(CostModel, ZeroSmAllGatherHasNoComputeContention) {
  Profile p = linearProfile(0.5, 0);
  p.computeContention = 1.3;
  p.commContention = 1.2;
  OVERLAP_ASSIGN_OR_FAIL(
      plain, CostModel::create(p, problem(Collective::AllGather, 4096)));
  EXPECT_TRUE(plain.commTakesSms());
  EXPECT_DOUBLE_EQ(plain.getComputeContention(), 1.3);
  p.device.zeroSmAllGather = true;
  OVERLAP_ASSIGN_OR_FAIL(
      zero, CostModel::create(p, problem(Collective::AllGather, 4096)));
  EXPECT_FALSE(zero.commTakesSms());
  EXPECT_DOUBLE_EQ(zero.getComputeContention(), 1.0);
  // The copy engines still share memory bandwidth with the GEMM.
  EXPECT_DOUBLE_EQ(zero.getCommContention(), 1.2);
  // Only the all-gather runs on the copy engines.
  for (Collective c : {Collective::ReduceScatter, Collective::AllReduce}) {
    OVERLAP_ASSIGN_OR_FAIL(other, CostModel::create(p, problem(c, 4096)));
    EXPECT_TRUE(other.commTakesSms());
    EXPECT_DOUBLE_EQ(other.getComputeContention(), 1.3);
  }
}

TEST(CostModel, ZeroSmAllGatherIsParsed) {
  auto text = [](const std::string &value) {
    return R"({"device": {"sm_count": 132, "zero_sm_all_gather": )" + value +
           R"(}, "gemm": {"curves": [{"n": 1024, "k": 512, "dtype": "f16",
             "curve": {"table": [[0, 0], [1024, 100]]}}]},
             "collectives": {"all-gather": [{"ranks": 8, "x_unit": "MiB",
               "curve": {"table": [[0, 0], [1, 10]]}}]}})";
  };
  OVERLAP_ASSIGN_OR_FAIL(on, parseProfile(text("true"), "t.json"));
  EXPECT_TRUE(on.device.zeroSmAllGather);
  OVERLAP_ASSIGN_OR_FAIL(off, parseProfile(text("false"), "t.json"));
  EXPECT_FALSE(off.device.zeroSmAllGather);
  std::string error = errorOf(parseProfile(text("1"), "t.json"));
  EXPECT_TRUE(contains(error, "device.zero_sm_all_gather")) << error;
  EXPECT_TRUE(contains(error, "true or false")) << error;
}

//===----------------------------------------------------------------------===//
// The decomposition's own copies
//===----------------------------------------------------------------------===//

TEST(CostModel, TileCopiesArePricedAtMemoryBandwidthOnTheirStream) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  ASSERT_TRUE(p.device.memoryBandwidth.has_value());
  MatmulProblem plain{Collective::AllToAll, 4096, 2048, 1024, DType::BF16, 8};
  plain.side = AllToAllSide::Dispatch;
  MatmulProblem copying = plain;
  copying.computeCopyBytesPerRow = 2.0 * 1024 * 2; // dispatch packs A rows
  copying.commCopyBytesPerRow = 2.0 * 2048 * 2;
  OVERLAP_ASSIGN_OR_FAIL(base, CostModel::create(p, plain));
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, copying));
  const double us = 1e6 / *p.device.memoryBandwidth; // per byte
  EXPECT_DOUBLE_EQ(model.copyUs(1e6), 1e6 * us);
  EXPECT_DOUBLE_EQ(model.copyUs(0), 0);
  // A tile smaller than M pays its copies on the stream they run on.
  EXPECT_NEAR(model.gemmUs(512), base.gemmUs(512) + 512 * 4096 * us, 1e-9);
  EXPECT_NEAR(model.commUs(512), base.commUs(512) + 512 * 8192 * us, 1e-9);
  // All of M is one unpacked tile: no copy, so serial does not change.
  EXPECT_DOUBLE_EQ(model.gemmUs(4096), base.gemmUs(4096));
  EXPECT_DOUBLE_EQ(model.serialUs(), base.serialUs());
  // A profile without a memory bandwidth prices copies at nothing.
  Profile none = p;
  none.device.memoryBandwidth.reset();
  OVERLAP_ASSIGN_OR_FAIL(unpriced, CostModel::create(none, copying));
  EXPECT_DOUBLE_EQ(unpriced.copyUs(1e6), 0);
}

/// Curves measured for (1024, 512) and (4096, 4096) f16 (100 µs and 1600 µs
/// at 1024 rows), no roofline; peaks given for f16 and f32 only.
static std::string neighbourProfileText() {
  return R"({
    "device": {"peak_tflops": {"f16": 800, "f32": 100}},
    "gemm": {"curves": [
      {"n": 1024, "k": 512, "dtype": "f16",
       "curve": {"table": [[0, 0], [1024, 100]]}},
      {"n": 4096, "k": 4096, "dtype": "f16",
       "curve": {"table": [[0, 0], [1024, 1600]]}}]},
    "collectives": {"all-reduce": [{"ranks": 8, "x_unit": "MiB",
                    "curve": {"table": [[0, 0], [1, 10]]}}]}})";
}

TEST(CostModel, AShapeWithoutACurveIsPricedFromTheNearestOneScaled) {
  OVERLAP_ASSIGN_OR_FAIL(p, parseProfile(neighbourProfileText(), "n.json"));
  // (2048, 512) is nearest (1024, 512): twice the work per row.
  MatmulProblem pb{Collective::AllReduce, 1024, 2048, 512, DType::F16, 8};
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, pb));
  EXPECT_NEAR(model.contiguousGemmUs(1024), 200.0 + p.gemmLatencyUs, 1e-9);
  std::string source = model.describeGemmSource();
  EXPECT_TRUE(contains(source, "curve N=1024 K=512 f16 scaled x2")) << source;
  EXPECT_TRUE(contains(source, "no curve for N=2048 K=512 f16")) << source;
  // (4096, 2048) is nearest (4096, 4096): half the work per row.
  pb.n = 4096;
  pb.k = 2048;
  OVERLAP_ASSIGN_OR_FAIL(half, CostModel::create(p, pb));
  EXPECT_NEAR(half.contiguousGemmUs(1024), 800.0 + p.gemmLatencyUs, 1e-9);
  // The exact curve is used as it is.
  pb.n = 1024;
  pb.k = 512;
  OVERLAP_ASSIGN_OR_FAIL(exact, CostModel::create(p, pb));
  EXPECT_NEAR(exact.contiguousGemmUs(1024), 100.0 + p.gemmLatencyUs, 1e-9);
  EXPECT_EQ(exact.describeGemmSource(), "curve N=1024 K=512 f16");
}

TEST(CostModel, AnotherDtypesCurveIsScaledByThePeaksOrNotUsed) {
  OVERLAP_ASSIGN_OR_FAIL(p, parseProfile(neighbourProfileText(), "n.json"));
  // f32 from the f16 curve: the same work, 8x slower peak.
  MatmulProblem pb{Collective::AllReduce, 1024, 1024, 512, DType::F32, 8};
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, pb));
  EXPECT_NEAR(model.contiguousGemmUs(1024), 800.0 + p.gemmLatencyUs, 1e-9);
  // bf16 has no peak: nothing to scale by, and no roofline.
  pb.dtype = DType::BF16;
  std::string error = errorOf(CostModel::create(p, pb));
  EXPECT_TRUE(contains(error, "no GEMM curve for N=1024 K=512 bf16")) << error;
  EXPECT_TRUE(contains(error, "no curve to scale from")) << error;
}

TEST(CostModel, TheShippedMeasuredProfilePricesEveryExampleShape) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h200-measured")));
  // The examples' shapes: Llama's merged gate/up (bf16), the MLP and MoE
  // (f32), none of them measured.
  for (auto [n, k, dtype] :
       {std::tuple{int64_t(7168), int64_t(8192), DType::BF16},
        std::tuple{int64_t(512), int64_t(512), DType::F32},
        std::tuple{int64_t(128), int64_t(64), DType::F32}}) {
    MatmulProblem pb{Collective::AllGather, 4096, n, k, dtype, 8};
    OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, pb));
    EXPECT_GT(model.fullGemmUs(), 0.0);
    EXPECT_TRUE(contains(model.describeGemmSource(), "scaled"))
        << model.describeGemmSource();
  }
}

//===- LimitsTest.cpp - Hostile sizes, profiles and searches ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Issue 14's reproducers: sizes that overflowed or allocated without end,
// profiles whose plans were not numbers, searches that ran for minutes.
// Each must now end quickly in a plan of finite numbers or an error that
// names the value and the limit (Limits.h).
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Limits.h"
#include "overlap/Planner/ChainPlanner.h"
#include "overlap/Planner/TileLayout.h"
#include "overlap/Planner/TilePlanner.h"

#include "TestHelpers.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace overlap::planner;
using namespace overlap::planner::testing_helpers;

namespace {

bool contains(const std::string &s, llvm::StringRef part) {
  return s.find(part.str()) != std::string::npos;
}

/// Linear curves for (n, k): `gemmPerRow` µs per row, `commPerMiB` µs per
/// MiB, for the three collectives measured at 8 ranks.
Profile linearProfile(int64_t n, int64_t k, double gemmPerRow,
                      double commPerMiB) {
  Profile p = linearCurvesProfile(n, k, gemmPerRow, 1 << 20, 10, commPerMiB);
  p.device.smCount = 132;
  p.device.gemmTile = {128, 256};
  p.device.peakFlops[static_cast<int>(DType::F16)] = 989e12;
  return p;
}

TEST(Limits, ProblemSizesAreBounded) {
  Profile p = linearProfile(8192, 3072, 0.1, 20);
  MatmulProblem pb{Collective::AllReduce, 4096, 8192, 3072, DType::F16, 8};
  struct Case {
    int64_t MatmulProblem::*field;
    int64_t value;
    const char *message;
  } cases[] = {
      // overlap-plan --m 1099511627776 aborted with std::bad_alloc in mc2.
      {&MatmulProblem::m, int64_t(1) << 40,
       "--m: expected rows M in [1, 2147483648], got 1099511627776"},
      // --n 2^40 ran for minutes; N = K = 2^63 - 1 overflowed.
      {&MatmulProblem::n, int64_t(1) << 40,
       "--n: expected columns N in [1, 2147483648], got 1099511627776"},
      {&MatmulProblem::k, std::numeric_limits<int64_t>::max(),
       "--k: expected depth K in [1, 2147483648], got 9223372036854775807"},
      {&MatmulProblem::ranks, 65537,
       "--ranks: expected a group size in [1, 65536], got 65537"},
      {&MatmulProblem::m, 0, "--m: expected rows M in [1, 2147483648], got 0"},
  };
  for (const Case &c : cases) {
    MatmulProblem bad = pb;
    bad.*c.field = c.value;
    for (llvm::StringRef s : {"none", "mc2", "auto"}) {
      llvm::Expected<Plan> plan = planTiles(p, bad, s);
      EXPECT_EQ(codeOf(std::move(plan)),
                std::make_error_code(std::errc::invalid_argument));
    }
    EXPECT_EQ(errorOf(CostModel::create(p, bad)), c.message);
  }
}

TEST(Limits, LargestProblemPlansInRange) {
  // Every size at its limit: every product of sizes must stay in range
  // (the UBSan build checks the integer arithmetic) and every strategy
  // ends in a finite plan or an error, quickly.
  const int64_t big = kMaxDim;
  Profile p = linearProfile(big, big, 1e-3, 1e-9);
  p.alignment = 1;
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter}) {
    MatmulProblem pb{c, big, big, big, DType::F16, kMaxRanks};
    for (llvm::StringRef s :
         {"none", "uniform:4096", "mc2", "optimal", "waves", "ficco", "auto"}) {
      llvm::Expected<Plan> plan = planTiles(p, pb, s);
      if (!plan) {
        // Past a limit: a tile count or the work bound, never a size;
        // none and auto always plan.
        EXPECT_TRUE(s != "none" && s != "auto") << s.str();
        EXPECT_NE(codeOf(std::move(plan)),
                  std::make_error_code(std::errc::not_supported))
            << s.str();
        continue;
      }
      EXPECT_TRUE(std::isfinite(plan->predictedUs)) << s.str();
      EXPECT_TRUE(std::isfinite(plan->efficiency)) << s.str();
      EXPECT_LE(plan->tiles.size(), size_t(kMaxTiles)) << s.str();
    }
  }
}

TEST(Limits, EveryStrategyHasAWorkBound) {
  MatmulProblem pb{Collective::AllReduce, 4096, 8192, 3072, DType::F16, 8};
  // device.gemm_tile [1, 1] gave 289263 waves and a 509 s search.
  Profile tiny = linearProfile(8192, 3072, 0.1, 20);
  tiny.device.gemmTile = {1, 1};
  std::string e = errorOf(planTiles(tiny, pb, "waves"));
  EXPECT_TRUE(contains(e, "waves: grouping 254201 waves of 132 output tiles "
                          "of 1x1 (33554432 tiles) needs at least"))
      << e;
  EXPECT_TRUE(contains(e, "past the planner's work bound of 67108864")) << e;
  EXPECT_EQ(codeOf(planTiles(tiny, pb, "waves")),
            std::make_error_code(std::errc::result_out_of_range));
  // auto still plans, and says why waves was skipped.
  OVERLAP_ASSIGN_OR_FAIL(autoPlan, planTiles(tiny, pb, "auto"));
  bool skipped = false;
  for (const Candidate &c : autoPlan.candidates)
    skipped |= c.strategy == "waves" && !c.ok && contains(c.note, "work bound");
  EXPECT_TRUE(skipped);

  // optimal on a one-row grid over a large M: refused before allocating.
  Profile fine = linearProfile(8192, 3072, 0.1, 20);
  fine.alignment = 1;
  MatmulProblem large = pb;
  large.m = int64_t(1) << 30;
  e = errorOf(planTiles(fine, large, "optimal"));
  EXPECT_TRUE(contains(e, "optimal: the exact search over M = 1073741824 "
                          "rows in 1073741824 blocks of 1 needs at least"))
      << e;
  // ... and when the DP itself passes the bound.
  large.m = 16384;
  e = errorOf(planTiles(fine, large, "optimal"));
  EXPECT_TRUE(contains(e, "past the planner's work bound")) << e;

  // mc2's long blocks (805 rows here) on a one-row grid: more tiles than a
  // plan may have.
  MatmulProblem tall = pb;
  tall.m = kMaxDim;
  e = errorOf(planTiles(fine, tall, "mc2"));
  EXPECT_TRUE(contains(e, "mc2: tiles: expected a tile count (long blocks of"))
      << e;
  EXPECT_TRUE(contains(e, "in [1, 4096]")) << e;

  // uniform:n, FiCCO's steps, given tiles.
  Profile p = linearProfile(8192, 3072, 0.1, 20);
  p.alignment = 1;
  e = errorOf(planTiles(p, pb, "uniform:4097"));
  EXPECT_EQ(e, "--strategy: uniform:n: expected a tile count n in [1, 4096], "
               "got 4097");
  MatmulProblem wide = pb;
  wide.m = 8192;
  wide.ranks = 8192;
  e = errorOf(planTiles(p, wide, "ficco"));
  EXPECT_TRUE(contains(e, "ficco: steps: expected a tile count (one step "
                          "per rank) in [1, 4096], got 8192"))
      << e;
  std::vector<int64_t> ones(4097, 1);
  MatmulProblem rows = pb;
  rows.m = 4097;
  e = errorOf(evaluateTiles(p, rows, ones));
  EXPECT_EQ(e, "tiles: expected a tile count in [1, 4096], got 4097");
  e = errorOf(evaluateTiles(p, pb, {std::numeric_limits<int64_t>::max(), 1}));
  EXPECT_TRUE(contains(e, "larger than M = 4096")) << e;

  // The chain planner: OP_Count compares (n^3 - n) / 6 splits.
  std::vector<int64_t> dims(1001, 64);
  e = errorOf(planChain(dims, 65536));
  EXPECT_TRUE(contains(e, "chain: ordering 1000 matrices (OP_Count) needs at "
                          "least 166666500 split comparisons"))
      << e;
  EXPECT_FALSE(minScalarMults(dims));
  llvm::consumeError(minScalarMults(dims).takeError());
  e = errorOf(planChain({8, 8, 8}, 1e300));
  EXPECT_TRUE(contains(e, "--fast-memory: expected a fast-memory size of at "
                          "least 1 element and at most"))
      << e;
}

TEST(Limits, PlansAreFiniteOrRefused) {
  MatmulProblem pb{Collective::AllReduce, 4096, 8192, 3072, DType::F16, 8};
  // Curves that pass validation but are taken far outside what they
  // describe gave inf plans and `--json` output that was not JSON.
  for (double coeff : {1e300, 1e308}) {
    Profile p = linearProfile(8192, 3072, 0.1, 20);
    p.commCurves[0].curve =
        Curve::piecewise({{0, INFINITY, {0, coeff, coeff}}});
    for (llvm::StringRef s :
         {"none", "uniform:4", "mc2", "optimal", "waves", "ficco"}) {
      std::string e = errorOf(planTiles(p, pb, s));
      EXPECT_TRUE(contains(e, s.str() + ": ")) << e;

      EXPECT_TRUE(contains(e, "not a time within 1e+15 us")) << e;
      EXPECT_EQ(codeOf(planTiles(p, pb, s)),
                std::make_error_code(std::errc::result_out_of_range));
    }
    std::string e = errorOf(planTiles(p, pb, "auto"));
    EXPECT_TRUE(contains(e, "auto: no strategy gave a plan; none: ")) << e;
    e = errorOf(evaluateTiles(p, pb, {2048, 2048}));
    EXPECT_TRUE(contains(e, "not a time within")) << e;
  }
}

TEST(Limits, ProfileNumbersAreBounded) {
  auto parse = [](const std::string &device, const std::string &gemm,
                  const std::string &extra) {
    std::string text = R"({"device": {)" + device + R"(},
      "gemm": {)" + gemm +
                       R"("curves": [{"n": 8192, "k": 3072,
        "dtype": "f16", "curve": {"table": [[0, 0], [4096, 400]]}}]},
      "collectives": {"all-reduce": [{"ranks": 8, "x_unit": "MiB",
        "curve": {"table": [[0, 10], [64, 900]]}}]})" +
                       extra + "}";
    return errorOf(parseProfile(text, "p.json"));
  };
  struct Case {
    const char *device, *gemm, *extra, *message;
  } cases[] = {
      {"", R"("latency_us": 1e308, )", "",
       "p.json: gemm.latency_us: expected a time (µs) in [0, 1e+09], got "
       "1e+308"},
      {R"("memory_bandwidth_gbps": 1e-320, "peak_tflops": {"f16": 1})",
       R"("roofline": {}, )", "",
       "p.json: device.memory_bandwidth_gbps: expected a bandwidth (GB/s) in "
       "[1e-06, 1e+09], got 9.99989e-321"},
      {R"("peak_tflops": {"f16": 1e30})", "", "",
       "p.json: device.peak_tflops.f16: expected TFLOP/s in [1e-06, 1e+09], "
       "got 1e+30"},
      {R"("sm_count": 1099511627776)", "", "",
       "p.json: device.sm_count: expected an integer >= 1 and <= 1048576, got "
       "1099511627776"},
      {R"("gemm_tile": [1, 4194304])", "", "",
       "p.json: device.gemm_tile[1]: expected an integer >= 1 and <= "
       "1048576, got 4194304"},
      {"", "", R"(, "alignment": 9223372036854775807)",
       "p.json: alignment: expected an integer >= 1 and <= 1048576"},
      {"", "", R"(, "contention": 1e300)",
       "p.json: contention: expected a slowdown factor in [1, 1000], got "
       "1e+300"},
      {"", "", R"(, "ficco": {"reference_us": 1e-320})",
       "p.json: ficco.reference_us: expected a number in [1e-06, 1e+12], got "
       "9.99989e-321"},
      {R"("memory_bandwidth_gbps": 1, "peak_tflops": {"f16": 1})",
       R"("roofline": {"efficiency": 1e-320}, )", "",
       "p.json: gemm.roofline.efficiency: expected a fraction in [1e-06, 1]"},
  };
  for (const Case &c : cases) {
    std::string e = parse(c.device, c.gemm, c.extra);
    EXPECT_TRUE(contains(e, c.message)) << e;
  }
  // Curve values are times too.
  std::string e = errorOf(parseProfile(R"({"gemm": {"curves": [{"n": 8,
      "k": 8, "dtype": "f16", "curve": {"table": [[0, 0], [8, 1e308]]}}]},
      "collectives": {}})",
                                       "p.json"));
  EXPECT_TRUE(contains(e, "p.json: gemm.curves[0].curve.table[1][1]: expected "
                          "a time (µs) in [0, 1e+09], got 1e+308"))
      << e;
}

TEST(Limits, TileSumsCannotOverflow) {
  std::string e = errorOf(TileLayout::create(
      Collective::AllReduce, 8, 1, {std::numeric_limits<int64_t>::max(), 1}));
  EXPECT_EQ(e, "tiles sum to more than M = 8");
}

} // namespace

//===- ProfileTest.cpp - Profile parsing and validation tests --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Profile.h"
#include "overlap/Planner/CostModel.h"

#include "TestHelpers.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace overlap::planner;
using namespace overlap::planner::testing_helpers;

namespace {

std::string shipped(llvm::StringRef name) {
  return std::string(OVERLAP_PROFILES_DIR) + "/" + name.str() + ".json";
}

/// A small valid profile; tests splice faults into it.
std::string profileText(const std::string &commCurve =
                            R"({"pieces": [{"from": 0, "to": null,
                                "coeffs": [5, 2]}]})",
                        const std::string &extra = "") {
  return R"({
    "name": "t",
    "gemm": {"curves": [{"n": 1024, "k": 512, "dtype": "f16",
                         "curve": {"table": [[0, 0], [1024, 100]]}}]},
    "collectives": {"all-reduce": [{"ranks": 8, "x_unit": "MiB",
                                    "curve": )" +
         commCurve + "}]}" + extra + "}";
}

std::string parseError(const std::string &text) {
  return errorOf(parseProfile(text, "bad.json"));
}

TEST(Profile, LoadsMc2Example) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("mc2-example")));
  EXPECT_EQ(p.name, "mc2-example");
  EXPECT_DOUBLE_EQ(p.computeContention, 1.15);
  EXPECT_DOUBLE_EQ(p.commContention, 1.15);
  EXPECT_EQ(p.alignment, 128);
  const CommCurve *ar = p.findCommCurve(Collective::AllReduce, 8);
  ASSERT_NE(ar, nullptr);
  // The seed's check: a 384-row tile is 6 MB and takes "143 µs" (the fit
  // gives 142.2; x 1.15 = 163.6, the seed's 164).
  double x = 384.0 * 8192 * 2 / ar->bytesPerUnit;
  EXPECT_DOUBLE_EQ(x, 6.0);
  EXPECT_NEAR(ar->curve.eval(x), 143.0, 1.0);
  EXPECT_NEAR(ar->curve.eval(x) * 1.15, 164.0, 0.5);
  // Linear branch from 8 MB on.
  EXPECT_NEAR(ar->curve.eval(64.0), 13.58491263 * 64 + 61.508333, 1e-9);
  const GemmCurve *mm = p.findGemmCurve(8192, 3072, DType::F16);
  ASSERT_NE(mm, nullptr);
  EXPECT_NEAR(mm->curve.eval(4096), 803.0, 1e-9);
  EXPECT_EQ(p.findGemmCurve(8192, 3072, DType::BF16), nullptr);
}

TEST(Profile, LoadsDatasheetProfile) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  EXPECT_NE(p.provenance.find("not measured"), std::string::npos);
  ASSERT_TRUE(p.device.smCount.has_value());
  EXPECT_EQ(*p.device.smCount, 132);
  ASSERT_TRUE(p.device.getPeakFlops(DType::BF16).has_value());
  EXPECT_DOUBLE_EQ(*p.device.getPeakFlops(DType::BF16), 989.4e12);
  EXPECT_TRUE(p.rooflineEfficiency.has_value());
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather})
    EXPECT_NE(p.findCommCurve(c, 8), nullptr);
}

TEST(Profile, ResolvesBareNames) {
  EXPECT_EQ(resolveProfilePath("mc2-example", OVERLAP_PROFILES_DIR),
            shipped("mc2-example"));
  EXPECT_EQ(resolveProfilePath(shipped("mc2-example"), "/nonexistent"),
            shipped("mc2-example"));
  EXPECT_EQ(resolveProfilePath("no-such-profile", OVERLAP_PROFILES_DIR), "");
}

TEST(Profile, TableCurvesInterpolateAndExtend) {
  Curve c = Curve::table({{1, 10}, {3, 30}, {5, 34}});
  EXPECT_DOUBLE_EQ(c.eval(2), 20);
  EXPECT_DOUBLE_EQ(c.eval(4), 32);
  EXPECT_DOUBLE_EQ(c.eval(7), 38); // last segment extended
  EXPECT_DOUBLE_EQ(c.eval(0), 0);  // first segment extended
  EXPECT_DOUBLE_EQ(c.eval(-5), 0); // never negative
  Curve pw = Curve::piecewise({{0, 2, {1, 1}}, {2, INFINITY, {0, 0, 1}}});
  EXPECT_DOUBLE_EQ(pw.eval(1), 2);
  EXPECT_DOUBLE_EQ(pw.eval(3), 9);
}

TEST(Profile, NearestGroupSizeAndRingScaling) {
  std::string text = profileText(
      R"({"pieces": [{"from": 0, "to": null, "coeffs": [0, 10]}]})");
  OVERLAP_ASSIGN_OR_FAIL(p, parseProfile(text, "t.json"));
  MatmulProblem pb{Collective::AllReduce, 1024, 1024, 512, DType::F16, 4};
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(p, pb));
  // 512 rows x 1024 x 2 B = 1 MiB: 10 µs at 8 ranks, scaled by
  // (2*3/4) / (2*7/8) for 4 ranks.
  EXPECT_NEAR(model.commUs(512), 10.0 * 1.5 / 1.75, 1e-12);
  pb.ranks = 1;
  OVERLAP_ASSIGN_OR_FAIL(single, CostModel::create(p, pb));
  EXPECT_EQ(single.commUs(512), 0);
}

TEST(Profile, CommBytesFollowTheCollective) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  MatmulProblem pb{Collective::ReduceScatter, 4096, 8192, 3072, DType::BF16, 8};
  OVERLAP_ASSIGN_OR_FAIL(rs, CostModel::create(p, pb));
  EXPECT_DOUBLE_EQ(rs.commBytes(512), 512.0 * 8192 * 2);
  pb.collective = Collective::AllGather;
  OVERLAP_ASSIGN_OR_FAIL(ag, CostModel::create(p, pb));
  EXPECT_DOUBLE_EQ(ag.commBytes(512), 512.0 * 3072 * 2);
  EXPECT_EQ(ag.getOrder(), PipelineOrder::CommThenCompute);
  pb.dtype = DType::F32;
  OVERLAP_ASSIGN_OR_FAIL(ag32, CostModel::create(p, pb));
  EXPECT_DOUBLE_EQ(ag32.commBytes(512), 512.0 * 3072 * 4);
}

// bf16 factors with an f32 accumulator reduce f32: the wire bytes follow
// the collective's element type, the GEMM's curve the factors'.
TEST(Profile, CommBytesFollowTheCollectivesElementType) {
  OVERLAP_ASSIGN_OR_FAIL(p, loadProfile(shipped("h100-nvlink-datasheet")));
  MatmulProblem pb{Collective::ReduceScatter, 4096, 8192, 3072, DType::BF16, 8};
  pb.commDtype = DType::F32;
  OVERLAP_ASSIGN_OR_FAIL(rs, CostModel::create(p, pb));
  EXPECT_DOUBLE_EQ(rs.commBytes(512), 512.0 * 8192 * 4);
  OVERLAP_ASSIGN_OR_FAIL(
      same, CostModel::create(p, MatmulProblem{Collective::ReduceScatter, 4096,
                                               8192, 3072, DType::BF16, 8}));
  EXPECT_DOUBLE_EQ(same.commBytes(512), 512.0 * 8192 * 2);
  EXPECT_GT(rs.commUs(512), same.commUs(512));
  EXPECT_DOUBLE_EQ(rs.fullGemmUs(), same.fullGemmUs());
}

TEST(Profile, ErrorsNameFileFieldAndExpectation) {
  std::string e = parseError("{\"gemm\": ");
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  EXPECT_NE(e.find("invalid JSON"), std::string::npos) << e;

  e = parseError(profileText(
      R"({"pieces": [{"from": 0, "to": 8, "coeffs": [1, 2]},
                     {"from": 8, "to": null, "coeffs": "fast"}]})"));
  EXPECT_NE(e.find("bad.json: collectives.all-reduce[0].curve.pieces[1]."
                   "coeffs: expected a non-empty array of numbers"),
            std::string::npos)
      << e;

  e = parseError(profileText(
      R"({"pieces": [{"from": 0, "to": 8, "coeffs": [1, 2]},
                     {"from": 9, "to": null, "coeffs": [1, 2]}]})"));
  EXPECT_NE(e.find("pieces[1].from: expected the previous piece's \"to\""),
            std::string::npos)
      << e;

  e = parseError(profileText(R"({"table": [[0, 5], [1, 4]]})"));
  EXPECT_NE(e.find("curve.table[1][1]: expected a monotone table"),
            std::string::npos)
      << e;

  e = parseError(profileText(
      R"({"pieces": [{"from": 0, "to": 100, "coeffs": [1, 10, -1]}]})"));
  EXPECT_NE(e.find("pieces[0]: expected a nondecreasing polynomial"),
            std::string::npos)
      << e;

  e = parseError(profileText(R"({"pieces": [], "table": [[0, 1]]})"));
  EXPECT_NE(e.find("curve: expected exactly one of"), std::string::npos) << e;

  e = parseError(
      profileText(R"({"table": [[0, 1]]})", R"(, "contention": 0.9)"));
  EXPECT_NE(e.find("contention: expected a slowdown factor in [1, 1000], "
                   "got 0.9"),
            std::string::npos)
      << e;

  e = parseError(profileText(R"({"table": [[0, 1]]})", R"(, "alignmnet": 64)"));
  EXPECT_NE(e.find("alignmnet: expected no such field"), std::string::npos)
      << e;

  e = parseError(
      profileText(R"({"table": [[0, 1]]})",
                  R"(, "device": {"sm_count": 100, "comm_sms": 100})"));
  EXPECT_NE(e.find("device.comm_sms: expected fewer SMs"), std::string::npos)
      << e;

  e = parseError(R"({"gemm": {"roofline": {}}, "collectives": {}})");
  EXPECT_NE(e.find("device.memory_bandwidth_gbps"), std::string::npos) << e;

  e = parseError(R"({"collectives": {}})");
  EXPECT_NE(e.find("bad.json: gemm: expected"), std::string::npos) << e;

  e = parseError(
      profileText(R"({"table": [[0, 1]]})")
          .replace(profileText().find("\"ranks\": 8"), 10, "\"ranks\": 1"));
  EXPECT_NE(e.find("ranks: expected an integer >= 2 and <= 65536, got 1"),
            std::string::npos)
      << e;

  // The names a field takes, listed from their tables (EnumNames.h).
  auto spliced = [](std::string text, const std::string &from,
                    const std::string &to) {
    return text.replace(text.find(from), from.size(), to);
  };
  e = parseError(
      spliced(profileText(), "\"x_unit\": \"MiB\"", "\"x_unit\": \"MB\""));
  EXPECT_NE(e.find("x_unit: expected one of \"B\", \"KiB\", \"MiB\", "
                   "\"GiB\""),
            std::string::npos)
      << e;
  e = parseError(
      spliced(profileText(), "\"dtype\": \"f16\"", "\"dtype\": \"f8\""));
  EXPECT_NE(e.find("dtype: expected one of \"f16\", \"bf16\", \"f32\""),
            std::string::npos)
      << e;
  e = parseError(profileText(
      R"({"table": [[0, 1]]})",
      R"(, "device": {"peak_tflops": {"f8": 100}, "sm_count": 100})"));
  EXPECT_NE(e.find("device.peak_tflops.f8: expected a dtype key (f16, bf16, "
                   "f32)"),
            std::string::npos)
      << e;

  e = errorOf(loadProfile("/nonexistent/profile.json"));
  EXPECT_NE(e.find("/nonexistent/profile.json: cannot read profile"),
            std::string::npos)
      << e;
}

TEST(Profile, NestingIsBoundedBeforeParsing) {
  // A hundred thousand levels overflowed the parser's stack, even in a
  // "note", which is otherwise never looked at.
  const std::string deep(100000, '[');
  const std::string closed = deep + std::string(100000, ']');
  std::string e = parseError(
      profileText(R"({"table": [[0, 1]]})", ", \"note\": " + closed));
  EXPECT_NE(e.find("bad.json: invalid JSON: nested deeper than 64 levels at "
                   "byte "),
            std::string::npos)
      << e;
  // Unclosed brackets; the (0-based) byte offset, line and column are of
  // the bracket that opens level 65.
  e = parseError("{\n  \"note\": " + deep);
  EXPECT_EQ(e, "bad.json: invalid JSON: nested deeper than 64 levels at byte "
               "75 (line 2, column 74)");

  // Brackets in strings (after an escaped quote, too) are not nesting.
  OVERLAP_ASSIGN_OR_FAIL(
      p, parseProfile(profileText(R"({"table": [[0, 1]]})",
                                  ", \"note\": \"\\\"" + deep + "\""),
                      "t.json"));
  EXPECT_EQ(p.name, "t");
  // 64 levels are fine, 65 are not.
  auto nested = [](int levels) {
    return std::string(levels - 1, '[') + std::string(levels - 1, ']');
  };
  OVERLAP_ASSIGN_OR_FAIL(p64,
                         parseProfile(profileText(R"({"table": [[0, 1]]})",
                                                  ", \"note\": " + nested(64)),
                                      "t.json"));
  EXPECT_EQ(p64.name, "t");
  e = parseError(
      profileText(R"({"table": [[0, 1]]})", ", \"note\": " + nested(65)));
  EXPECT_NE(e.find("nested deeper than 64 levels"), std::string::npos) << e;
}

TEST(Profile, MissingCurvesAreReportedWhenPricing) {
  OVERLAP_ASSIGN_OR_FAIL(p, parseProfile(profileText(), "t.json"));
  // No bf16 curve, no peaks to scale the f16 one by, no roofline. (An f16
  // shape without its own curve is priced from the f16 curve scaled:
  // CostModelTest.)
  MatmulProblem pb{Collective::AllReduce, 1024, 2048, 512, DType::BF16, 8};
  std::string e = errorOf(CostModel::create(p, pb));
  EXPECT_NE(e.find("no GEMM curve for N=2048 K=512 bf16"), std::string::npos)
      << e;
  EXPECT_EQ(codeOf(CostModel::create(p, pb)),
            std::make_error_code(std::errc::not_supported));
  pb.dtype = DType::F16;
  pb.n = 1024;
  pb.collective = Collective::AllGather;
  e = errorOf(CostModel::create(p, pb));
  EXPECT_NE(e.find("no curve for all-gather"), std::string::npos) << e;
  pb.collective = Collective::ReduceScatter;
  pb.m = 1001; // not divisible by 8 ranks
  EXPECT_EQ(codeOf(CostModel::create(p, pb)),
            std::make_error_code(std::errc::invalid_argument));
}

} // namespace

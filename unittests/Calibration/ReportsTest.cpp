//===- ReportsTest.cpp - What ranks tell each other after a step ----------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/Reports.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace overlap::calibration;

namespace {

TEST(Reports, RoundTrip) {
  RankReport r;
  r.rank = 5;
  r.fingerprint = 0x0123456789abcdefULL;
  r.message = "serial: tile 2: C(1, 2) = nan";
  r.values = {1.5, -2.25, 1e300};
  std::vector<char> bytes = encodeReport(r);
  EXPECT_EQ(bytes.size(), reportBytes(3));
  EXPECT_EQ(reportBytes(3) % 8, 0u);
  RankReport back;
  std::string why;
  ASSERT_TRUE(decodeReport(bytes.data(), bytes.size(), back, why)) << why;
  EXPECT_EQ(back.rank, 5);
  EXPECT_EQ(back.fingerprint, r.fingerprint);
  EXPECT_EQ(back.message, r.message);
  EXPECT_EQ(back.values, r.values);

  r.message = std::string(1000, 'x');
  r.values.clear();
  bytes = encodeReport(r);
  ASSERT_TRUE(decodeReport(bytes.data(), bytes.size(), back, why)) << why;
  EXPECT_EQ(back.message, std::string(reportMessageBytes - 1, 'x'));
  EXPECT_TRUE(back.values.empty());

  EXPECT_FALSE(decodeReport(bytes.data(), bytes.size() - 8, back, why));
  EXPECT_FALSE(why.empty());
  bytes[0] ^= 1;
  EXPECT_FALSE(decodeReport(bytes.data(), bytes.size(), back, why));
  EXPECT_NE(why.find("magic"), std::string::npos) << why;
  // Three numbers announced, none sent.
  r.values = {1, 2, 3};
  bytes = encodeReport(r);
  bytes.resize(reportBytes(0));
  EXPECT_FALSE(decodeReport(bytes.data(), bytes.size(), back, why));
}

TEST(Reports, SlowestRankPerRun) {
  std::vector<RankReport> reports(3);
  reports[0].values = {10, 20, 30};
  reports[1].values = {12, 19, 30};
  reports[2].values = {11, 25, 29};
  EXPECT_EQ(maxOverRanks(reports), (std::vector<double>{12, 25, 30}));
  reports[1].values[0] = NAN;
  EXPECT_TRUE(std::isnan(maxOverRanks(reports)[0]));
  reports[2].values.pop_back();
  EXPECT_TRUE(maxOverRanks(reports).empty());
  EXPECT_TRUE(maxOverRanks({}).empty());
}

TEST(Reports, Failures) {
  std::vector<RankReport> reports(4);
  for (int32_t r = 0; r < 4; ++r)
    reports[size_t(r)].rank = r;
  EXPECT_EQ(describeFailures(reports), "");
  reports[2].message = "overlapped: tile 1: wrong";
  EXPECT_EQ(describeFailures(reports), "rank 2: overlapped: tile 1: wrong");
  reports[3].message = "serial: x";
  EXPECT_EQ(describeFailures(reports),
            "rank 2: overlapped: tile 1: wrong (and 1 more rank)");
  reports[0].message = "serial: y";
  EXPECT_EQ(describeFailures(reports), "rank 0: serial: y (and 2 more ranks)");
  // One rank: no rank prefix (the one-process output is unchanged).
  EXPECT_EQ(describeFailures({reports[3]}), "serial: x");
}

TEST(Reports, ArgumentFingerprints) {
  using Args = std::vector<std::string>;
  const Args ignored = {"--csv"};
  const Args base = {"--leg", "nccl", "--csv", "a.csv", "--iters", "5"};
  const uint64_t h = argumentFingerprint(base, ignored, "");
  EXPECT_EQ(h, argumentFingerprint(base, ignored, ""));
  // The CSV only rank 0 writes does not matter; everything else does.
  EXPECT_EQ(
      h, argumentFingerprint(
             {"--leg", "nccl", "--csv", "b.csv", "--iters", "5"}, ignored, ""));
  EXPECT_EQ(
      h, argumentFingerprint({"--leg", "nccl", "--iters", "5"}, ignored, ""));
  EXPECT_NE(
      h, argumentFingerprint(
             {"--leg", "nccl", "--csv", "a.csv", "--iters", "6"}, ignored, ""));
  EXPECT_NE(
      h, argumentFingerprint({"--iters", "5", "--leg", "nccl"}, ignored, ""));
  EXPECT_NE(h, argumentFingerprint(base, ignored, "{profile}"));
  EXPECT_NE(argumentFingerprint({"ab", "c"}, {}, ""),
            argumentFingerprint({"a", "bc"}, {}, ""));

  std::vector<RankReport> reports(4);
  for (int32_t r = 0; r < 4; ++r) {
    reports[size_t(r)].rank = r;
    reports[size_t(r)].fingerprint = h;
  }
  EXPECT_TRUE(mismatchedRanks(reports).empty());
  reports[1].fingerprint = h + 1;
  reports[3].fingerprint = h + 2;
  EXPECT_EQ(mismatchedRanks(reports), (std::vector<int32_t>{1, 3}));
}

TEST(Reports, Median) {
  EXPECT_EQ(median({}), 0.0);
  EXPECT_EQ(median({3}), 3.0);
  EXPECT_EQ(median({5, 1, 3}), 3.0);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
}

} // namespace

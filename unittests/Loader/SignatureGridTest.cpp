//===- SignatureGridTest.cpp - Grids with a dynamic extent ---------------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Artifact/Signature.h"
#include "overlap/Loader/Run.h"

#include <gtest/gtest.h>

using namespace overlap::artifact;

namespace {

/// A signature with `grids` ("grid NAME SHAPE" lines), through its text.
Signature parsed(const std::string &grids) {
  Signature base;
  base.name = "f";
  base.symbol = cInterfaceSymbol("f");
  base.target = "host";
  Signature sig;
  std::string error;
  EXPECT_TRUE(parseSignature(formatSignature(base) + grids, sig, error))
      << error;
  return sig;
}

TEST(SignatureGrid, ADynamicExtentRoundTrips) {
  Signature sig = parsed("grid g 2x?\n");
  ASSERT_EQ(sig.grids.size(), 1u);
  EXPECT_EQ(sig.grids[0].shape, (std::vector<int64_t>{2, kDynamicExtent}));
  EXPECT_NE(formatSignature(sig).find("grid g 2x?\n"), std::string::npos);
}

TEST(SignatureGrid, RanksFillTheDynamicExtent) {
  Signature sig = parsed("grid g 2x?\n");
  std::string error;
  EXPECT_TRUE(checkRanks(sig, 6, error)) << error;
  EXPECT_FALSE(checkRanks(sig, 5, error));
  EXPECT_NE(error.find("must be a multiple of that"), std::string::npos)
      << error;
  // Without --ranks: the dynamic extent 2.
  EXPECT_EQ(defaultRanks(sig), 4);
  // A static grid beside it sets the default.
  EXPECT_EQ(defaultRanks(parsed("grid g 2x?\ngrid h 3\n")), 3);
}

TEST(SignatureGrid, SeveralDynamicExtents) {
  // The first dynamic extent takes the ranks the static ones leave, any
  // other is 1: 3x?x? fits every multiple of 3, and runs 6 ranks without
  // --ranks.
  Signature sig = parsed("grid g 3x?x?\n");
  ASSERT_EQ(sig.grids.size(), 1u);
  EXPECT_EQ(sig.grids[0].size(), 3);
  EXPECT_TRUE(sig.grids[0].fits(3));
  EXPECT_TRUE(sig.grids[0].fits(12));
  EXPECT_FALSE(sig.grids[0].fits(4));
  EXPECT_EQ(defaultRanks(sig), 6);
  Signature again;
  std::string error;
  EXPECT_TRUE(parseSignature(formatSignature(sig), again, error)) << error;
  EXPECT_EQ(formatSignature(again), formatSignature(sig));
}

TEST(SignatureGrid, AnEntryWithoutGridsMatchesAnyReference) {
  Signature program = parsed("grid g 4\n"), reference = parsed("");
  EXPECT_EQ(signatureDifference(program, reference), "");
  EXPECT_NE(signatureDifference(program, parsed("grid g 2\n")), "");
}

TEST(SignatureGrid, DynamicBufferSizesResolve) {
  // "?" sizes round-trip; the arguments' come from the inputs or are 2 x
  // the ranks, the results' from what the ranks return.
  Signature sig = parsed("grid g ?\narg arg0 ?x3xf32\narg arg1 4xi8\n"
                         "result result0 ?x?xf32\n");
  ASSERT_EQ(sig.args.size(), 2u);
  EXPECT_TRUE(sig.args[0].isDynamic());
  EXPECT_FALSE(sig.args[1].isDynamic());
  EXPECT_EQ(sig.args[0].typeString(), "?x3xf32");
  Signature again;
  std::string error;
  ASSERT_TRUE(parseSignature(formatSignature(sig), again, error)) << error;
  EXPECT_EQ(formatSignature(again), formatSignature(sig));

  Signature seeded = sig;
  ASSERT_TRUE(overlap::run::resolveArgumentShapes(seeded, 3, {}, error));
  EXPECT_EQ(seeded.args[0].typeString(), "6x3xf32");
  Signature given = sig;
  ASSERT_TRUE(
      overlap::run::resolveArgumentShapes(given, 3, {{5, 3}, {}}, error));
  EXPECT_EQ(given.args[0].typeString(), "5x3xf32");
  EXPECT_FALSE(
      overlap::run::resolveArgumentShapes(sig, 3, {{5, 2}, {}}, error));
  EXPECT_NE(error.find("arg0 (?x3xf32) is given with size 2 in dimension 1"),
            std::string::npos)
      << error;

  std::vector<std::vector<overlap::run::OutputView>> outputs(2);
  for (auto &rank : outputs) {
    rank.resize(1);
    rank[0].sizes = {7, 2};
  }
  Signature results = sig;
  ASSERT_TRUE(overlap::run::resolveResultShapes(results, outputs, error));
  EXPECT_EQ(results.results[0].typeString(), "7x2xf32");
  outputs[1][0].sizes = {6, 2};
  results = sig;
  EXPECT_FALSE(overlap::run::resolveResultShapes(results, outputs, error));
  EXPECT_NE(error.find("is 7x2 on rank 0 and 6x2 on rank 1"),
            std::string::npos)
      << error;
}

} // namespace

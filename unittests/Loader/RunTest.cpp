//===- RunTest.cpp - A rank's result storage across runs -------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA executor calls a program's entry several times on one rank's
// storage (warm-up and timed runs). Before each call it poisoned the result
// words by filling the whole storage with -1, guard words included, so
// every run on a GPU was refused as "the program wrote result descriptors
// past the 7 words its signature declares" (seen on the first GPU session,
// 2026-11-27). resetResultStorage poisons the descriptors and restores the
// guard.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/Run.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace overlap;
using namespace overlap::run;

namespace {

Signature oneResult() {
  Signature sig;
  sig.name = "f";
  sig.symbol = "_mlir_ciface_f";
  BufferSpec arg;
  arg.name = "arg0";
  arg.shape = {4, 8};
  sig.args.push_back(arg);
  BufferSpec result;
  result.name = "result0";
  result.shape = {4, 8};
  sig.results.push_back(result);
  return sig;
}

/// What a program's C interface writes for a 4x8 result: a contiguous
/// memref descriptor (allocated, aligned, offset, sizes, strides).
void writeResult(RankData &data, float *buffer) {
  int64_t words[7] = {reinterpret_cast<int64_t>(buffer),
                      reinterpret_cast<int64_t>(buffer), 0, 4, 8, 8, 1};
  std::memcpy(data.results.data(), words, sizeof(words));
}

TEST(ResultStorage, ASecondRunOnTheSameStorageKeepsItsGuard) {
  Signature sig = oneResult();
  RankData data;
  ASSERT_TRUE(prepareRank(sig, /*seed=*/1, /*rank=*/0, data)) << data.error;
  ASSERT_EQ(data.results.size(), 7 + kResultGuardWords);
  float buffer[32] = {};
  std::vector<OutputView> views;
  std::string error;
  for (int run = 0; run < 3; ++run) {
    if (run > 0)
      resetResultStorage(sig, data);
    for (size_t w = 0; w < 7; ++w)
      EXPECT_EQ(data.results[w], -1) << "run " << run << ", word " << w;
    for (size_t w = 7; w < data.results.size(); ++w)
      EXPECT_EQ(data.results[w], kResultGuard) << "run " << run;
    writeResult(data, buffer);
    views.clear();
    EXPECT_TRUE(outputViews(sig, data, views, error))
        << "run " << run << ": " << error;
  }
}

TEST(ResultStorage, AWriteIntoTheGuardIsStillCaught) {
  Signature sig = oneResult();
  RankData data;
  ASSERT_TRUE(prepareRank(sig, 1, 0, data)) << data.error;
  resetResultStorage(sig, data);
  float buffer[32] = {};
  writeResult(data, buffer);
  data.results[7] = 0; // one word past the declared descriptor
  std::vector<OutputView> views;
  std::string error;
  EXPECT_FALSE(outputViews(sig, data, views, error));
  EXPECT_NE(error.find("wrote result descriptors past the 7 words"),
            std::string::npos)
      << error;
}

} // namespace

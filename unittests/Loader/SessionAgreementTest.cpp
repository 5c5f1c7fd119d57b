//===- SessionAgreementTest.cpp - Ranks as processes agree first ---------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/SessionAgreement.h"

#include <gtest/gtest.h>

using namespace overlap::exec;

namespace {

std::string facts(int iters, const std::string &ref, uint64_t seed) {
  SessionFacts f;
  f.add("--ref", ref);
  f.add("--iters", std::to_string(iters));
  f.add("--seed", std::to_string(seed));
  return f.text();
}

TEST(SessionAgreement, EqualSessionsAgree) {
  std::string same = facts(2, "none", 1);
  EXPECT_EQ(describeDisagreement({same, same, same, same}), "");
}

TEST(SessionAgreement, EachDifferingOptionIsOneLineWithItsRanks) {
  std::vector<std::string> all = {facts(3, "none", 1), facts(3, "none", 1),
                                  facts(1, "none", 1), facts(1, "a.so", 1)};
  EXPECT_EQ(describeDisagreement(all),
            "--ref: none on ranks 0, 1, 2; a.so on rank 3\n"
            "--iters: 3 on ranks 0, 1; 1 on ranks 2, 3");
}

TEST(SessionAgreement, ARankThatSaidNothingIsNotCompared) {
  // A rank that failed before its session was ready has its own error.
  std::vector<std::string> all = {facts(1, "none", 1), "", facts(1, "none", 1)};
  EXPECT_EQ(describeDisagreement(all), "");
}

TEST(SessionAgreement, AKeyOnlySomeRanksHaveIsNamed) {
  SessionFacts seeded, given;
  seeded.add("--seed", "1");
  given.addHashed("--inputs", "abc", 3);
  std::string text = describeDisagreement({seeded.text(), given.text()});
  EXPECT_NE(text.find("--seed: 1 on rank 0; (not given) on rank 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("--inputs: (not given) on rank 0; fnv1a "),
            std::string::npos)
      << text;
}

TEST(SessionAgreement, ValuesCannotForgeLines) {
  SessionFacts f;
  f.add("--outputs", "a\nb\tc");
  EXPECT_EQ(f.text(), "--outputs\ta b c\n");
}

TEST(SessionAgreement, Fnv1aIsTheStandardOne) {
  // FNV-1a 64 of "a" (the published test vector).
  EXPECT_EQ(fnv1a("a", 1), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a("", 0), 0xcbf29ce484222325ULL);
}

} // namespace

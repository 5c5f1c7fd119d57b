//===- RunOptionsTest.cpp - RunOptions.def and the flag parser ------------===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/RunOptions.h"
#include "overlap/Loader/Session.h"
#include "overlap/Support/Flags.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace overlap;
using namespace overlap::exec;

namespace {

bool parse(flags::Args &args, std::vector<const char *> words,
           bool positionals = false) {
  words.insert(words.begin(), "tool");
  return args.parse(int(words.size()), words.data(), 1, positionals);
}

flags::Args table() {
  return flags::Args({{"--ranks", "R", "ranks"},
                      {"--wait-timeout-ms", "MS", "a timeout"},
                      {"-v", "", "verbose"}});
}

TEST(Flags, ValuesSwitchesAndPositionals) {
  flags::Args args = table();
  ASSERT_TRUE(
      parse(args, {"a.so", "--ranks", "4", "-v", "--wait-timeout-ms=9", "b.so"},
            true))
      << args.error();
  EXPECT_EQ(args.get("--ranks", ""), "4");
  EXPECT_EQ(args.get("--wait-timeout-ms", ""), "9");
  EXPECT_TRUE(args.has("-v"));
  EXPECT_EQ(args.positionals(), (std::vector<std::string>{"a.so", "b.so"}));
  ASSERT_EQ(args.given().size(), 3u);
  EXPECT_EQ(args.given()[0].first, "--ranks");
  EXPECT_FALSE(args.helpAsked());

  flags::Args help = table();
  ASSERT_TRUE(parse(help, {"--ranks", "4", "--help", "--bogus"}));
  EXPECT_TRUE(help.helpAsked());
}

TEST(Flags, ErrorsNameTheFlag) {
  struct Case {
    std::vector<const char *> words;
    const char *error;
  };
  for (const Case &c :
       std::vector<Case>{{{"--wait-timout-ms", "5"},
                          "unknown option '--wait-timout-ms'; did you mean "
                          "'--wait-timeout-ms'?"},
                         {{"--frobnicate"}, "unknown option '--frobnicate'"},
                         {{"--ranks"}, "option '--ranks' needs a value (R)"},
                         {{"--ranks=4", "-v=1"}, "option '-v' takes no value"},
                         {{"a.so"}, "unexpected argument 'a.so'"}}) {
    flags::Args args = table();
    EXPECT_FALSE(parse(args, c.words));
    EXPECT_EQ(args.error(), c.error);
  }
}

TEST(Flags, HelpIsMadeOfTheTable) {
  std::string help = flags::formatHelp(
      {{"--ranks", "R", "ranks"},
       {"--a-very-long-flag-name", "VALUE", "said below the name"},
       {"-v", "", std::string(30, 'x') + " " + std::string(40, 'y') + " z"}});
  EXPECT_EQ(help, "  --ranks R             ranks\n"
                  "  --a-very-long-flag-name VALUE\n"
                  "                        said below the name\n"
                  "  -v                    " +
                      std::string(30, 'x') + "\n                        " +
                      std::string(40, 'y') + " z\n");
  EXPECT_EQ(flags::listChoices({"a", "b", "c"}), "a, b or c");
  EXPECT_EQ(flags::closest("--rank", {"--ranks", "--seed"}), "--ranks");
  EXPECT_EQ(flags::closest("--zzzzzz", {"--ranks", "--seed"}), "");
}

TEST(RunOptions, EveryRowHasAFlagHelpAndItsDefault) {
  SessionOptions defaults;
  for (const RunOption &row : runOptions()) {
    EXPECT_EQ(findRunOption(row.flag), &row);
    EXPECT_NE(std::string(row.help), "") << row.flag;
    // The defaults pass their own checks.
    EXPECT_EQ(checkRunOptions(defaults), "");
  }
  EXPECT_EQ(defaultText(*findRunOption("seed")), "default 1");
  EXPECT_EQ(defaultText(*findRunOption("ranks")),
            "default 0: the size of the program's grid");
  EXPECT_EQ(defaultText(*findRunOption("backend")),
            "default: the program's target");
  EXPECT_EQ(defaultText(*findRunOption("ranks-as")), "default threads");
  SessionOptions tool;
  tool.ranksAs = RanksAs::Auto;
  EXPECT_EQ(defaultText(*findRunOption("ranks-as"), tool), "default auto");
  EXPECT_EQ(defaultText(*findRunOption("ref")), "");
  EXPECT_EQ(flagSpelling(*findRunOption("v")), "-v");
  EXPECT_EQ(findRunOption("nope"), nullptr);
}

TEST(RunOptions, SetFromTextAndChecked) {
  SessionOptions o;
  auto set = [&](const char *flag, const char *text) {
    return setRunOption(o, *findRunOption(flag), text);
  };
  EXPECT_EQ(set("ranks", "4"), "");
  EXPECT_EQ(o.ranks, 4);
  EXPECT_EQ(set("ranks-as", "processes"), "");
  EXPECT_EQ(o.ranksAs, RanksAs::Processes);
  EXPECT_EQ(set("chaos", "18446744073709551615"), "");
  EXPECT_EQ(o.chaos, std::optional<uint64_t>(UINT64_MAX));
  EXPECT_EQ(set("rtol", "1e-3"), "");
  EXPECT_DOUBLE_EQ(o.rtol, 1e-3);
  EXPECT_EQ(set("v", "1"), "");
  EXPECT_TRUE(o.verbose);
  EXPECT_EQ(set("backend", "cuda"), "");
  EXPECT_EQ(o.backend, "cuda");

  EXPECT_EQ(set("ranks", "1025"),
            "--ranks '1025': expected 0 (the size of the program's grid) to "
            "1024 ranks");
  EXPECT_EQ(set("ranks", "4x"), "--ranks '4x': expected 0 (the size of the "
                                "program's grid) to 1024 ranks");
  EXPECT_EQ(set("ranks", "99999999999"),
            "--ranks '99999999999': expected 0 (the size of the program's "
            "grid) to 1024 ranks");
  EXPECT_EQ(set("backend", "gpu"), "--backend 'gpu': expected host or cuda");
  EXPECT_EQ(set("atol", "nan"), "--atol 'nan': expected a finite number >= 0");
  EXPECT_EQ(set("seed", "-1"),
            "--seed '-1': expected an unsigned 64-bit integer");
  EXPECT_EQ(set("inputs", ""), "--inputs '': expected a file name");
  EXPECT_EQ(setRunOption(o, *findRunOption("device"), "-1", "device"),
            "device '-1': expected 0 to 1023 (a CUDA device)");

  // A value set without text (C, Python, C++) meets the same rows.
  SessionOptions c;
  c.waitTimeoutMs = -1;
  EXPECT_EQ(checkRunOptions(c), "--wait-timeout-ms -1: expected 0 (the "
                                "runtime's default) to 1000000000 "
                                "milliseconds");
  c = SessionOptions();
  c.atol = INFINITY;
  EXPECT_EQ(checkRunOptions(c,
                            [](const RunOption &row) {
                              return std::string("OverlapRunOptions.") +
                                     row.field;
                            }),
            "OverlapRunOptions.atol inf: expected a finite number >= 0");
  c = SessionOptions();
  c.refBackend = "tpu";
  EXPECT_EQ(checkRunOptions(c), "--ref-backend tpu: expected host or cuda");
  c = SessionOptions();
  c.iterations = 0;
  EXPECT_EQ(checkRunOptions(c), "--iters 0: expected 1 to 1000000 iterations");
}

} // namespace

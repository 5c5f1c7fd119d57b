//===- JsonTest.cpp - Plans as JSON, requests from JSON ---------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// One writer of a plan's JSON: the object the compiler hands on
// (planToJSON) is the document overlap-plan --json prints, with its numbers
// as numbers. Requests are strict: a field a request does not have is an
// error naming it, where it used to be ignored and its default planned.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Json.h"
#include "overlap/Planner/Defaults.h"
#include "overlap/Planner/TilePlanner.h"

#include "TestHelpers.h"

#include "llvm/Support/JSON.h"
#include "gtest/gtest.h"

using namespace overlap::planner;
using namespace overlap::planner::testing_helpers;

namespace {

std::string shipped(llvm::StringRef name) {
  return std::string(OVERLAP_PROFILES_DIR) + "/" + name.str() + ".json";
}

/// The MC² seed's example: M=4096 K=3072 N=8192 f16 on 8 ranks.
constexpr const char kMc2Request[] =
    R"({"collective": "all-reduce", "m": 4096, "n": 8192, "k": 3072,
        "ranks": 8, "profile": "mc2-example", "strategy": "mc2"})";

/// `request` with `field` added before its closing brace.
std::string with(llvm::StringRef field) {
  return (llvm::StringRef(kMc2Request).drop_back() + ", " + field + "}").str();
}

TEST(PlanJSON, ObjectIsTheDocumentWithNumbersAsNumbers) {
  OVERLAP_ASSIGN_OR_FAIL(profile, loadProfile(shipped("mc2-example")));
  MatmulProblem pb{Collective::AllReduce, 4096, 8192, 3072, DType::F16, 8};
  OVERLAP_ASSIGN_OR_FAIL(model, CostModel::create(profile, pb));
  OVERLAP_ASSIGN_OR_FAIL(plan, planTiles(profile, pb, "mc2"));

  llvm::json::Object object = planToJSON(plan, pb, profile, model);
  const llvm::json::Array *tiles = object.getArray("tiles");
  ASSERT_NE(tiles, nullptr);
  std::vector<int64_t> rows;
  for (const llvm::json::Value &t : *tiles) {
    ASSERT_TRUE(t.getAsInteger()) << "tiles are integers, not text";
    rows.push_back(*t.getAsInteger());
  }
  EXPECT_EQ(rows, (std::vector<int64_t>{512, 896, 896, 896, 896}));
  for (llvm::StringRef key : {"predicted_us", "serial_us", "ideal_us",
                              "efficiency", "lower_bound_us"})
    EXPECT_TRUE(object.getNumber(key)) << key.str() << " is a number";
  EXPECT_EQ(object.getString("strategy"), "mc2");
  EXPECT_EQ(object.getString("bound"), "comm");
  ASSERT_NE(object.getObject("problem"), nullptr);
  EXPECT_EQ(object.getObject("problem")->getInteger("m"), 4096);

  // The same document overlap-plan --json prints and planFromJSON returns.
  std::string text;
  llvm::raw_string_ostream os(text);
  writePlanJSON(plan, pb, profile, model, os);
  llvm::Expected<llvm::json::Value> printed = llvm::json::parse(text);
  ASSERT_TRUE(bool(printed)) << llvm::toString(printed.takeError());
  EXPECT_EQ(*printed, llvm::json::Value(llvm::json::Object(object)));
  OVERLAP_ASSIGN_OR_FAIL(requested, planFromJSON(kMc2Request));
  llvm::Expected<llvm::json::Value> returned = llvm::json::parse(requested);
  ASSERT_TRUE(bool(returned)) << llvm::toString(returned.takeError());
  EXPECT_EQ(*returned, llvm::json::Value(llvm::json::Object(object)));
}

TEST(PlanRequest, MisspeltFieldIsAnErrorNamingIt) {
  struct Case {
    const char *field, *misspelt, *meant;
  } cases[] = {{R"("dtpye": "f32")", "dtpye", "dtype"},
               {R"("stratgy": "none")", "stratgy", "strategy"},
               {R"("profle": "h100-nvlink-datasheet")", "profle", "profile"},
               {R"("expert": 2)", "expert", "experts"},
               {R"("Ranks": 4)", "Ranks", "ranks"}};
  for (const Case &c : cases) {
    llvm::Expected<std::string> plan = planFromJSON(with(c.field));
    EXPECT_EQ(codeOf(planFromJSON(with(c.field))),
              std::make_error_code(std::errc::invalid_argument))
        << c.field;
    std::string e = errorOf(std::move(plan));
    EXPECT_NE(e.find(std::string("\"") + c.misspelt + "\": no such field"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find(std::string("did you mean \"") + c.meant + "\"?"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("a matmul request has \"kind\", \"collective\""),
              std::string::npos)
        << e;
  }
  // Nothing close: no guess.
  std::string e = errorOf(planFromJSON(with(R"("x": 1)")));
  EXPECT_NE(e.find("\"x\": no such field;"), std::string::npos) << e;
  EXPECT_EQ(e.find("did you mean"), std::string::npos) << e;
  // Every unknown field is named, in order.
  e = errorOf(planFromJSON(with(R"("zeta": 1, "alpha": 2)")));
  EXPECT_NE(e.find("\"alpha\": no such field; \"zeta\": no such field"),
            std::string::npos)
      << e;
  // A chain request has its own fields.
  e = errorOf(planFromJSON(
      R"({"kind": "chain", "dims": [10, 30, 5], "fast_mem": 1024})"));
  EXPECT_NE(e.find("\"fast_mem\": no such field (did you mean "
                   "\"fast_memory\"?); a chain request has \"kind\", "
                   "\"dims\", \"fast_memory\""),
            std::string::npos)
      << e;
  e = errorOf(planFromJSON(R"({"kind": "chain", "dims": [10, 30, 5],
                               "fast_memory": 1024, "dtype": "f16"})"));
  EXPECT_NE(e.find("\"dtype\": no such field"), std::string::npos) << e;
}

TEST(PlanRequest, WrongTypeIsAnErrorNotTheDefault) {
  // Each of these used to plan the default (f16, auto, the default
  // profile, a matmul) as if the field were absent.
  for (auto [field, message] :
       {std::pair<const char *, const char *>{
            R"("dtype": 32)", "\"dtype\": expected a string, got 32"},
        {R"("dtype": null)", "\"dtype\": expected a string, got null"},
        {R"("strategy": ["mc2"])",
         "\"strategy\": expected a string, got [\"mc2\"]"},
        {R"("kind": 1)", "\"kind\": expected a string, got 1"}}) {
    std::string request = (llvm::Twine(R"({"collective": "all-reduce",
        "m": 4096, "n": 8192, "k": 3072, "ranks": 8, )") +
                           field + "}")
                              .str();
    std::string e = errorOf(planFromJSON(request));
    EXPECT_NE(e.find(message), std::string::npos) << e;
  }
  std::string e = errorOf(planFromJSON(
      R"({"collective": "all-reduce", "m": 4096, "n": 8192, "k": 3072,
          "ranks": 8, "profile": {"name": "mc2-example"}})"));
  EXPECT_NE(e.find("\"profile\": expected a string, got {"), std::string::npos)
      << e;
  e = errorOf(planFromJSON(
      R"({"collective": "all-reduce", "m": "4096", "n": 8192, "k": 3072,
          "ranks": 8})"));
  EXPECT_NE(e.find("\"m\": expected a positive integer, got \"4096\""),
            std::string::npos)
      << e;
}

TEST(PlanRequest, LeftOutFieldsTakeTheSharedDefaults) {
  OVERLAP_ASSIGN_OR_FAIL(text,
                         planFromJSON(R"({"collective": "all-reduce", "m": 4096,
                             "n": 8192, "k": 3072, "ranks": 8})"));
  llvm::Expected<llvm::json::Value> doc = llvm::json::parse(text);
  ASSERT_TRUE(bool(doc)) << llvm::toString(doc.takeError());
  const llvm::json::Object *object = doc->getAsObject();
  ASSERT_NE(object, nullptr);
  OVERLAP_ASSIGN_OR_FAIL(profile, loadProfile(shipped(kDefaultProfile)));
  EXPECT_EQ(object->getString("profile"), profile.name);
  EXPECT_EQ(object->getObject("problem")->getString("dtype"), "f16");
}

} // namespace

//===- RuntimeABITest.cpp - The ABI table against the headers ---*- C++ -*-===//
//
// overlap/Runtime/RuntimeABI.def is what the lowering declares, the JIT
// registers and the loader looks up. Each row must be the function the
// headers declare (checked at compile time: a wrong type fails this file's
// build) and every function the headers export must have a row (checked by
// reading the headers).
//
//===----------------------------------------------------------------------===//

#include "overlap/Runtime/overlap_runtime.h"
#include "overlap/Runtime/overlap_runtime_cuda.h"
#include "overlap/Runtime/overlap_runtime_process.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>

// Types: the row's `result(parameters)` is exactly the declared function's.
#define OVERLAP_RUNTIME_FUNCTION(GROUP, NAME, RESULT, ...)                     \
  static_assert(std::is_same_v<decltype(::NAME), RESULT(__VA_ARGS__)>,         \
                #NAME ": RuntimeABI.def and the header disagree");
#include "overlap/Runtime/RuntimeABI.def"

namespace {

std::set<std::string> tableNames(const char *group) {
  std::set<std::string> names;
#define OVERLAP_RUNTIME_FUNCTION(GROUP, NAME, RESULT, ...)                     \
  if (std::string(#GROUP) == group)                                            \
    names.insert(#NAME);
#include "overlap/Runtime/RuntimeABI.def"
  return names;
}

/// The names of the functions `header` exports (OVERLAP_RUNTIME_EXPORT).
std::set<std::string> exportedNames(const std::string &header) {
  std::ifstream in(std::string(OVERLAP_RUNTIME_INCLUDE_DIR) + "/" + header);
  EXPECT_TRUE(in) << header;
  std::stringstream text;
  text << in.rdbuf();
  std::string source = text.str();
  // Drop comments, then find `OVERLAP_RUNTIME_EXPORT <result> name(`.
  source = std::regex_replace(source, std::regex(R"(/\*[^*]*\*+([^/*][^*]*\*+)*/)"), " ");
  std::set<std::string> names;
  std::regex decl(R"(OVERLAP_RUNTIME_EXPORT\s+[^;(#]*?\b(overlap_\w+)\s*\()");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), decl);
       it != std::sregex_iterator(); ++it)
    names.insert((*it)[1]);
  return names;
}

void expectSame(const char *group, const std::string &header) {
  std::set<std::string> table = tableNames(group);
  std::set<std::string> exported = exportedNames(header);
  for (const std::string &name : exported)
    EXPECT_TRUE(table.count(name))
        << header << " exports " << name
        << " but RuntimeABI.def has no " << group << " row for it";
  for (const std::string &name : table)
    EXPECT_TRUE(exported.count(name))
        << "RuntimeABI.def's " << group << " row " << name
        << " is not exported by " << header;
  EXPECT_FALSE(exported.empty()) << header;
}

TEST(RuntimeABI, CoreRowsAreOverlapRuntimeH) {
  expectSame("CORE", "overlap_runtime.h");
}
TEST(RuntimeABI, ProcessRowsAreOverlapRuntimeProcessH) {
  expectSame("PROCESS", "overlap_runtime_process.h");
}
TEST(RuntimeABI, CudaRowsAreOverlapRuntimeCudaH) {
  expectSame("CUDA", "overlap_runtime_cuda.h");
}

} // namespace

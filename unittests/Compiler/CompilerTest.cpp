//===- CompilerTest.cpp - lib/Compiler as a library --------------*- C++
//-*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The compiler library (libOverlapCompiler.so) called as a backend would
// call it, without a tool: options set by name and validated (a misspelt
// option or strategy is an error naming it, before anything compiles),
// values that would splice passes into a pipeline refused, and
// compileToFiles on a module: its plans, and diagnostics located in the
// caller's file name.
//
//===----------------------------------------------------------------------===//

#include "overlap/Compiler/Driver.h"
#include "overlap/Compiler/Options.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir::overlap::compiler;

namespace {

std::string message(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : std::string();
}

/// All-reduce after a matmul on a grid of 4: one fused op to plan.
const char *kModule = R"mlir(
shard.grid @tp(shape = 4)
func.func @mm(%a: tensor<256x64xf32>, %b: tensor<64x128xf32>) -> tensor<256x128xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<256x128xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<256x128xf32>) -> tensor<256x128xf32>
  %c = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x128xf32>) outs(%init : tensor<256x128xf32>) -> tensor<256x128xf32>
  %r = shard.all_reduce %c on @tp grid_axes = [0] : tensor<256x128xf32> -> tensor<256x128xf32>
  return %r : tensor<256x128xf32>
}
)mlir";

std::string tempPath(const char *suffix) {
  llvm::SmallString<128> path;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("overlap-compiler-test",
                                                  suffix, path));
  return std::string(path);
}

} // namespace

TEST(CompilerOptions, SetByNameAndValidated) {
  CompileOptions options;
  EXPECT_EQ(message(setCompileOption(options, "strategy", "uniform:2")), "");
  EXPECT_EQ(options.strategy, "uniform:2");
  EXPECT_EQ(message(options.validate()), "");
  // A misspelt flag names the closest one.
  std::string unknown = message(setCompileOption(options, "stratgy", "auto"));
  EXPECT_NE(unknown.find("stratgy"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("strategy"), std::string::npos) << unknown;
  // A misspelt strategy is an error before anything compiles.
  EXPECT_EQ(message(setCompileOption(options, "strategy", "unifrom:2")), "");
  std::string bad = message(options.validate());
  EXPECT_NE(bad.find("unifrom:2"), std::string::npos) << bad;
  options.strategy = "auto";
  options.target = "tpu";
  bad = message(options.validate());
  EXPECT_NE(bad.find("target"), std::string::npos) << bad;
  EXPECT_NE(bad.find("cuda"), std::string::npos) << bad;
}

TEST(CompilerOptions, ValuesThatWouldSplicePassesAreRefused) {
  EXPECT_EQ(message(checkOptionValue("profile", "h100.json")), "");
  EXPECT_NE(message(checkOptionValue("profile", "x} canonicalize{")), "");
  EXPECT_EQ(message(checkPipelineOptionsText("strategy=auto")), "");
  EXPECT_NE(message(checkPipelineOptionsText("strategy=auto),cse(")), "");
  EXPECT_NE(message(checkHostCPU("no-such-cpu")), "");
  EXPECT_EQ(message(checkHostCPU("")), "");
}

TEST(CompilerDriver, CompilesAModuleAndReturnsItsPlans) {
  DriverOptions options;
  options.compile.strategy = "uniform:2";
  options.emit = Emit::MLIR;
  std::string out = tempPath("mlir");
  llvm::Expected<Artifact> artifact = compileToFiles(kModule, out, options);
  ASSERT_TRUE(static_cast<bool>(artifact))
      << llvm::toString(artifact.takeError());
  ASSERT_EQ(artifact->plans.size(), 1u);
  EXPECT_EQ(artifact->path, out);
  uint64_t size = 0;
  EXPECT_FALSE(llvm::sys::fs::file_size(out, size));
  EXPECT_GT(size, 0u);
  llvm::sys::fs::remove(out);
}

TEST(CompilerDriver, ErrorsNameTheCallersFile) {
  DriverOptions options;
  options.emit = Emit::MLIR;
  options.sourceName = "layer.mlir";
  llvm::Expected<Artifact> artifact =
      compileToFiles("func.func @f( {", tempPath("mlir"), options);
  ASSERT_FALSE(static_cast<bool>(artifact));
  std::string text = llvm::toString(artifact.takeError());
  EXPECT_NE(text.find("layer.mlir:1:"), std::string::npos) << text;
}

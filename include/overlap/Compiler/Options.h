//===- Options.h - What the Overlap compiler is asked to do -----*- C++ -*-===//
//
// One typed options struct for the whole compile pipeline. Its member
// initializers are the defaults, spelled once: the registered pipeline
// `overlap-to-llvm{...}` (Pipeline.h), the driver (Driver.h), the tools, the
// C API and the Python package all start from a default-constructed
// CompileOptions.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_COMPILER_OPTIONS_H
#define OVERLAP_COMPILER_OPTIONS_H

#include "overlap/Planner/Defaults.h"

#include "llvm/Support/Error.h"

#include <string>

namespace mlir {
namespace overlap {
namespace compiler {

struct CompileOptions {
  /// Hardware profile for the Planner: a JSON path or the name of a shipped
  /// profile (planner::shippedProfilesDir).
  std::string profile = ::overlap::planner::kDefaultProfile;
  /// Tiling strategy: none, uniform:N, mc2, optimal, waves, ficco, auto.
  std::string strategy = ::overlap::planner::kDefaultStrategy;
  /// Runtime backend: host or cuda.
  std::string target = "host";
  /// overlap-schedule-streams{testing-drop-waits}: no waits (chaos tests).
  bool testingDropWaits = false;
  /// target=cuda: the GPU the kernels are compiled for, the PTX features
  /// (CUDA 13's ptxas needs +ptx80 or newer for sm_90a) and the form
  /// gpu-module-to-binary embeds (fatbin: SASS for the chip plus PTX; bin:
  /// cubin; isa: PTX only, compiled by the driver when the program loads).
  std::string gpuChip = "sm_90a";
  std::string gpuFeatures = "+ptx80";
  std::string gpuFormat = "fatbin";

  /// Checks the values that have a fixed set (target, gpu-format); the
  /// message names the option and the accepted values.
  llvm::Error validate() const;
};

/// Fails, naming `option`, when `value` holds a quote, a brace or a control
/// character: values are quoted into the stages' pipeline text, where these
/// would end the option and splice in other passes.
llvm::Error checkOptionValue(llvm::StringRef option, llvm::StringRef value);

/// Checks the options text of `overlap-to-llvm{...}` that a caller gives
/// (mlirOverlapRunPipeline): key=value pairs whose values may be quoted.
/// Fails, naming the option, on a brace anywhere, on '(', ')' or ','
/// outside quotes, on a control character or an unclosed quote: what would
/// end the options early and add passes.
llvm::Error checkPipelineOptionsText(llvm::StringRef text);

} // namespace compiler
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_COMPILER_OPTIONS_H

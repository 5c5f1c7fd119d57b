//===- Options.h - What the Overlap compiler is asked to do -----*- C++ -*-===//
//
// One typed options struct for the whole compile pipeline, one field per
// row of CompileOptions.def (whose DEFAULTs are the member initializers):
// the registered pipeline `overlap-to-llvm{...}` (Stages.h), the driver
// (Driver.h), the tools' flags, the C API and the Python package all start
// from it.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_COMPILER_OPTIONS_H
#define OVERLAP_COMPILER_OPTIONS_H

#include "overlap/Planner/Defaults.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir {
namespace overlap {
namespace compiler {

/// What the whole pipeline is asked to do: one field per row of
/// CompileOptions.def, its DEFAULT the member initializer.
struct CompileOptions {
// The C++ type of a KIND of CompileOptions.def (Stages.h uses them too).
#define OVERLAP_COMPILE_OPTION_TYPE_STRING std::string
#define OVERLAP_COMPILE_OPTION_TYPE_BOOL bool
#define OVERLAP_COMPILE_OPTION(FIELD, FLAG, KIND, DEFAULT, HELP)               \
  OVERLAP_COMPILE_OPTION_TYPE_##KIND FIELD = DEFAULT;
#include "overlap/Compiler/CompileOptions.def"

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

/// Registers one flag per row of CompileOptions.def (--profile, --strategy,
/// --target, ...) in `category`: what overlap-compile and overlap-run take.
void registerCompileCLOptions(llvm::cl::OptionCategory &category);

/// The values of those flags (the defaults when they were not registered).
CompileOptions compileOptionsFromCL();

/// Sets the option whose FLAG is `name` from its text form (a bool: true,
/// false, 1, 0); fails naming the option when there is none of that name
/// (with the closest one) or the value does not parse.
llvm::Error setCompileOption(CompileOptions &options, llvm::StringRef name,
                             llvm::StringRef value);

} // namespace compiler
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_COMPILER_OPTIONS_H

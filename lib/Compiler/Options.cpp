//===- Options.cpp - The compile options' flags and text form ----*- C++ -*-===//
//
// registerCompileCLOptions, compileOptionsFromCL and setCompileOption: the
// rows of CompileOptions.def as the tools' flags and as name=value text (the
// C API's overlapCompileOptionsSet).
//
//===----------------------------------------------------------------------===//

#include "overlap/Compiler/Options.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <memory>

using namespace mlir::overlap::compiler;
namespace cl = llvm::cl;

namespace {
/// One cl::opt per row, with the row's flag, help and default.
struct CompileCL {
  explicit CompileCL(cl::OptionCategory &category)
      :
#define OVERLAP_COMPILE_OPTION(FIELD, FLAG, KIND, DEFAULT, HELP)               \
  FIELD(FLAG, cl::desc(HELP), cl::init(CompileOptions().FIELD),                \
        cl::cat(category)),
#include "overlap/Compiler/CompileOptions.def"
        unused(0) {
  }
#define OVERLAP_COMPILE_OPTION(FIELD, FLAG, KIND, DEFAULT, HELP)               \
  cl::opt<OVERLAP_COMPILE_OPTION_TYPE_##KIND> FIELD;
#include "overlap/Compiler/CompileOptions.def"
  int unused;
};
CompileCL *compileCL = nullptr;

bool parseBool(llvm::StringRef text, bool &value) {
  if (text == "true" || text == "1") {
    value = true;
    return true;
  }
  if (text == "false" || text == "0") {
    value = false;
    return true;
  }
  return false;
}
bool parseValue(llvm::StringRef text, bool &value) {
  return parseBool(text, value);
}
bool parseValue(llvm::StringRef text, std::string &value) {
  value = text.str();
  return true;
}
} // namespace

void mlir::overlap::compiler::registerCompileCLOptions(
    cl::OptionCategory &category) {
  static CompileCL options(category);
  compileCL = &options;
}

CompileOptions mlir::overlap::compiler::compileOptionsFromCL() {
  CompileOptions options;
  if (!compileCL)
    return options;
#define OVERLAP_COMPILE_OPTION(FIELD, FLAG, KIND, DEFAULT, HELP)               \
  options.FIELD = compileCL->FIELD;
#include "overlap/Compiler/CompileOptions.def"
  return options;
}

llvm::Error mlir::overlap::compiler::setCompileOption(CompileOptions &options,
                                                      llvm::StringRef name,
                                                      llvm::StringRef value) {
  llvm::StringRef closest;
  unsigned distance = ~0u;
#define OVERLAP_COMPILE_OPTION(FIELD, FLAG, KIND, DEFAULT, HELP)               \
  if (name == FLAG) {                                                          \
    if (!parseValue(value, options.FIELD))                                     \
      return llvm::createStringError("option '%s': '%s' is not true, false, " \
                                     "1 or 0",                                 \
                                     FLAG, value.str().c_str());              \
    return llvm::Error::success();                                             \
  }                                                                            \
  if (unsigned d = name.edit_distance(FLAG); d < distance) {                   \
    distance = d;                                                              \
    closest = FLAG;                                                            \
  }
#include "overlap/Compiler/CompileOptions.def"
  return llvm::createStringError(
      "no compile option '%s'%s", name.str().c_str(),
      distance <= 3 ? (" (did you mean '" + closest + "'?)").str().c_str()
                    : "");
}

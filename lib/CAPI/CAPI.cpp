//===- CAPI.cpp - Overlap's C API --------------------------------*- C++ -*-===//
//
// overlap-c/Dialects.h, Passes.h and Compiler.h over InitAllDialects.h,
// InitAllPasses.h and the driver.
//
//===----------------------------------------------------------------------===//

#include "overlap-c/Compiler.h"
#include "overlap-c/Dialects.h"
#include "overlap-c/Passes.h"

#include "overlap/Compiler/Driver.h"
#include "overlap/Dialect/Overlap/IR/OverlapDialect.h"
#include "overlap/InitAllDialects.h"
#include "overlap/InitAllPasses.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace compiler = mlir::overlap::compiler;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Overlap, overlap,
                                      mlir::overlap::OverlapDialect)

void mlirOverlapRegisterAllDialects(MlirDialectRegistry registry) {
  mlir::overlap::registerAllDialects(*unwrap(registry));
}

void mlirRegisterOverlapPasses(void) { mlir::overlap::registerAllPasses(); }

OverlapCompileOptions overlapCompileOptionsDefault(void) {
  // The strings of a default-constructed DriverOptions, which live as long
  // as the process.
  static const compiler::DriverOptions defaults;
  OverlapCompileOptions options;
  options.profile = defaults.compile.profile.c_str();
  options.strategy = defaults.compile.strategy.c_str();
  options.target = defaults.compile.target.c_str();
  options.entry = defaults.entry.c_str();
  options.cpu = defaults.cpu.c_str();
  options.emit = OVERLAP_EMIT_SHARED_LIBRARY;
  options.optLevel = defaults.optLevel;
  return options;
}

struct OverlapCompileResult {
  bool succeeded = false;
  std::string error;
  std::string plansJSON = "[]";
  /// One warning a line (e.g. no signature embedded), empty if none.
  std::string warnings;
};

static std::string plansToJSON(const std::vector<compiler::PlanRecord> &plans) {
  llvm::json::Array array;
  for (const compiler::PlanRecord &plan : plans)
    array.push_back(compiler::toJSON(plan));
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(array));
  return text;
}

OverlapCompileResult *overlapCompile(MlirStringRef source,
                                     MlirStringRef outputPath,
                                     const OverlapCompileOptions *options) {
  auto *result = new OverlapCompileResult;
  compiler::DriverOptions driver;
  if (options) {
    auto set = [](std::string &field, const char *value) {
      if (value)
        field = value;
    };
    set(driver.compile.profile, options->profile);
    set(driver.compile.strategy, options->strategy);
    set(driver.compile.target, options->target);
    set(driver.entry, options->entry);
    set(driver.cpu, options->cpu);
    if (options->emit < OVERLAP_EMIT_MLIR ||
        options->emit > OVERLAP_EMIT_SHARED_LIBRARY) {
      result->error = "emit: " + std::to_string(int(options->emit)) +
                      " is not an OverlapEmit";
      return result;
    }
    driver.emit = static_cast<compiler::Emit>(options->emit);
    driver.optLevel = options->optLevel;
  }
  llvm::Expected<compiler::Artifact> artifact = compiler::compileToFiles(
      unwrap(source), unwrap(outputPath), driver);
  if (!artifact) {
    result->error = llvm::toString(artifact.takeError());
    return result;
  }
  result->succeeded = true;
  result->plansJSON = plansToJSON(artifact->plans);
  for (const std::string &warning : artifact->warnings)
    result->warnings += warning + "\n";
  return result;
}

bool overlapCompileResultSucceeded(const OverlapCompileResult *result) {
  return result && result->succeeded;
}

MlirStringRef overlapCompileResultError(const OverlapCompileResult *result) {
  // NULL-safe like every accessor: a null result is an empty text.
  return result ? wrap(llvm::StringRef(result->error)) : wrap(llvm::StringRef());
}

MlirStringRef
overlapCompileResultPlansJSON(const OverlapCompileResult *result) {
  return result ? wrap(llvm::StringRef(result->plansJSON))
                : wrap(llvm::StringRef("[]"));
}

MlirStringRef overlapCompileResultWarnings(const OverlapCompileResult *result) {
  return result ? wrap(llvm::StringRef(result->warnings))
                : wrap(llvm::StringRef());
}

void overlapCompileResultDestroy(OverlapCompileResult *result) {
  delete result;
}

MlirLogicalResult mlirOverlapRunPipeline(MlirModule module,
                                         MlirStringRef options) {
  ModuleOp op = unwrap(module);
  // The caller's text goes between braces: what would close them early
  // (and add passes of its choosing) is refused, naming the option.
  if (llvm::Error err = compiler::checkPipelineOptionsText(unwrap(options))) {
    emitError(op.getLoc()) << "overlap-to-llvm: "
                           << llvm::toString(std::move(err));
    return mlirLogicalResultFailure();
  }
  PassManager pm(op.getContext(), ModuleOp::getOperationName());
  std::string text = "overlap-to-llvm{" + unwrap(options).str() + "}";
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (failed(parsePassPipeline(text, pm, os))) {
    emitError(op.getLoc()) << "overlap-to-llvm: " << errors;
    return mlirLogicalResultFailure();
  }
  return wrap(pm.run(op));
}

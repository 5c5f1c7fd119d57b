//===- CAPI.cpp - Overlap's C API --------------------------------*- C++
//-*-===//
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

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>

using namespace mlir;
namespace compiler = mlir::overlap::compiler;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Overlap, overlap,
                                      mlir::overlap::OverlapDialect)

void mlirOverlapRegisterAllDialects(MlirDialectRegistry registry) {
  mlir::overlap::registerAllDialects(*unwrap(registry));
}

void mlirRegisterOverlapPasses(void) { mlir::overlap::registerAllPasses(); }

/// A C field's value: strings interned for the life of the process.
static const char *cValue(const std::string &text) {
  static std::mutex mutex;
  static std::set<std::string> *interned = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  return interned->insert(text).first->c_str();
}
static bool cValue(bool value) { return value; }

OverlapCompileOptions overlapCompileOptionsDefault(void) {
  // The strings of a default-constructed DriverOptions, which live as long
  // as the process.
  static const compiler::DriverOptions defaults;
  OverlapCompileOptions options;
  options.size = sizeof(OverlapCompileOptions);
#define OVERLAP_COMPILE_OPTION(FIELD, FLAG, KIND, DEFAULT, HELP)               \
  options.FIELD = cValue(defaults.compile.FIELD);
#include "overlap/Compiler/CompileOptions.def"
  options.entry = defaults.entry.c_str();
  options.cpu = defaults.cpu.c_str();
  options.emit = OVERLAP_EMIT_SHARED_LIBRARY;
  options.optLevel = defaults.optLevel;
  options.sourceName = defaults.sourceName.c_str();
  return options;
}

const char *overlapCompileOptionsLayout(void) {
  static const std::string layout = [] {
    llvm::json::Array fields;
    auto field = [&](const char *name, const char *flag, const char *kind,
                     size_t offset) {
      fields.push_back(llvm::json::Object{{"field", name},
                                          {"flag", flag},
                                          {"kind", kind},
                                          {"offset", int64_t(offset)}});
    };
    field("size", "", "size", offsetof(OverlapCompileOptions, size));
#define OVERLAP_COMPILE_OPTION_KIND_STRING "string"
#define OVERLAP_COMPILE_OPTION_KIND_BOOL "bool"
#define OVERLAP_COMPILE_OPTION(FIELD, FLAG, KIND, DEFAULT, HELP)               \
  field(#FIELD, FLAG, OVERLAP_COMPILE_OPTION_KIND_##KIND,                      \
        offsetof(OverlapCompileOptions, FIELD));
#include "overlap/Compiler/CompileOptions.def"
    field("entry", "entry", "string", offsetof(OverlapCompileOptions, entry));
    field("cpu", "mcpu", "string", offsetof(OverlapCompileOptions, cpu));
    field("emit", "emit", "emit", offsetof(OverlapCompileOptions, emit));
    field("optLevel", "O", "unsigned",
          offsetof(OverlapCompileOptions, optLevel));
    field("sourceName", "source-name", "string",
          offsetof(OverlapCompileOptions, sourceName));
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::json::Value(
        llvm::json::Object{{"size", int64_t(sizeof(OverlapCompileOptions))},
                           {"fields", std::move(fields)}});
    return text;
  }();
  return layout.c_str();
}

/// overlap-c/Export.h's convention: `status`, with `message` in
/// `*messages` when there is one.
static int reply(int status, const std::string &message, char **messages) {
  if (messages)
    *messages = message.empty() ? nullptr : strdup(message.c_str());
  return status;
}

void overlapFree(void *pointer) { std::free(pointer); }

int overlapCompileOptionsSet(OverlapCompileOptions *options, const char *flag,
                             const char *value, char **messages) {
  if (!options || !flag || !value)
    return reply(2, "overlapCompileOptionsSet: null options, flag or value",
                 messages);
  compiler::CompileOptions parsed;
  if (llvm::Error err = compiler::setCompileOption(parsed, flag, value))
    return reply(2, llvm::toString(std::move(err)), messages);
  llvm::StringRef name(flag);
#define OVERLAP_COMPILE_OPTION(FIELD, FLAG, KIND, DEFAULT, HELP)               \
  if (name == FLAG)                                                            \
    options->FIELD = cValue(parsed.FIELD);
#include "overlap/Compiler/CompileOptions.def"
  return reply(0, "", messages);
}

struct OverlapCompileResult {
  std::string plansJSON = "[]";
  std::string missedJSON = "[]";
  /// One warning a line (e.g. no signature embedded), empty if none.
  std::string warnings;
};

template <typename Record>
static std::string plansToJSON(const std::vector<Record> &records) {
  llvm::json::Array array;
  for (const Record &record : records)
    array.push_back(compiler::toJSON(record));
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(array));
  return text;
}

int overlapCompile(const char *source, size_t length, const char *outputPath,
                   const OverlapCompileOptions *options,
                   OverlapCompileResult **result, char **messages) {
  if (result)
    *result = nullptr;
  if (!source || !outputPath)
    return reply(2, "overlapCompile: null source or output path", messages);
  compiler::DriverOptions driver;
  if (options) {
    if (options->size != sizeof(OverlapCompileOptions))
      return reply(2,
                   "OverlapCompileOptions: size " +
                       std::to_string(options->size) +
                       ", but this library's is " +
                       std::to_string(sizeof(OverlapCompileOptions)) +
                       " (start from overlapCompileOptionsDefault(), built "
                       "with this library's overlap-c/Compiler.h)",
                   messages);
    auto set = [](auto &field, auto value) {
      if constexpr (std::is_pointer_v<decltype(value)>) {
        if (value)
          field = value;
      } else {
        field = value;
      }
    };
#define OVERLAP_COMPILE_OPTION(FIELD, FLAG, KIND, DEFAULT, HELP)               \
  set(driver.compile.FIELD, options->FIELD);
#include "overlap/Compiler/CompileOptions.def"
    set(driver.entry, options->entry);
    set(driver.cpu, options->cpu);
    if (options->emit < OVERLAP_EMIT_MLIR ||
        options->emit > OVERLAP_EMIT_SHARED_LIBRARY)
      return reply(2,
                   "emit: " + std::to_string(int(options->emit)) +
                       " is not an OverlapEmit",
                   messages);
    driver.emit = static_cast<compiler::Emit>(options->emit);
    driver.optLevel = options->optLevel;
    set(driver.sourceName, options->sourceName);
  }
  // A bad value is bad input (2), said before anything is compiled.
  if (llvm::Error err = driver.compile.validate())
    return reply(2, llvm::toString(std::move(err)), messages);
  llvm::Expected<compiler::Artifact> artifact = compiler::compileToFiles(
      llvm::StringRef(source, length), outputPath, driver);
  if (!artifact)
    return reply(1, llvm::toString(artifact.takeError()), messages);
  auto made = std::make_unique<OverlapCompileResult>();
  made->plansJSON = plansToJSON(artifact->plans);
  made->missedJSON = plansToJSON(artifact->missed);
  for (const std::string &warning : artifact->warnings)
    made->warnings += warning + "\n";
  if (result)
    *result = made.release();
  return reply(0, "", messages);
}

// NULL-safe like every accessor: a NULL result is an empty text or "[]".
const char *overlapCompileResultPlansJSON(const OverlapCompileResult *result) {
  return result ? result->plansJSON.c_str() : "[]";
}

const char *overlapCompileResultMissedJSON(const OverlapCompileResult *result) {
  return result ? result->missedJSON.c_str() : "[]";
}

const char *overlapCompileResultWarnings(const OverlapCompileResult *result) {
  return result ? result->warnings.c_str() : "";
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

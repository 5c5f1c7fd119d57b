//===- MlirFuzz.cpp - What the MLIR fuzz targets share ----------*- C++ -*-===//

#include "MlirFuzz.h"

#include "overlap/InitAllDialects.h"
#include "overlap/InitAllPasses.h"
#include "overlap/Planner/Defaults.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>

using namespace mlir;
using namespace ::overlap::fuzz;

/// OVERLAP_FUZZ_VERBOSE=1 prints every diagnostic and what each pipeline
/// did, for looking at what one input does (`<fuzzer> INPUT`).
static bool verbose() {
  static const bool on = [] {
    const char *v = std::getenv("OVERLAP_FUZZ_VERBOSE");
    return v && *v && llvm::StringRef(v) != "0";
  }();
  return on;
}

static const DialectRegistry &fuzzRegistry() {
  static const DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    mlir::overlap::registerAllDialects(*r);
    mlir::overlap::registerAllPasses();
    return r;
  }();
  return *registry;
}

FuzzContext::FuzzContext()
    : context(std::make_unique<MLIRContext>(fuzzRegistry(),
                                            MLIRContext::Threading::DISABLED)) {
  context->printOpOnDiagnostic(false);
  context->printStackTraceOnDiagnostic(false);
  handler = std::make_unique<ScopedDiagnosticHandler>(
      context.get(), [this](Diagnostic &diag) {
        if (verbose())
          llvm::errs() << "overlap fuzz: diagnostic: " << diag.str() << "\n";
        // Keep only a few: a pathological input may emit thousands.
        if (diagnostics.size() < 16)
          diagnostics.push_back(diag.str());
        return success();
      });
}

FuzzContext::~FuzzContext() = default;

OwningOpRef<ModuleOp> FuzzContext::parse(llvm::StringRef text) {
  // MLIR's lexer stops at the NUL that a MemoryBuffer read from a file
  // ends with, and parseSourceString does not add one: a libFuzzer input
  // (exactly its bytes) would be read past its end. Tools always parse
  // files (or NUL-terminated C strings), so the harness does the same.
  std::string terminated = text.str();
  ParserConfig config(context.get());
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(terminated, config, "fuzz-input");
  if (verbose())
    llvm::errs() << "overlap fuzz: " << (module ? "parsed" : "does not parse")
                 << ":\n"
                 << text << "\n";
  return module;
}

namespace {
/// MLIR's own verification after a pass reports a diagnostic and fails the
/// run, which a fuzz target could not tell from a pass that refused its
/// input with a diagnostic. This one stops instead.
class VerifyAfterEachPass : public PassInstrumentation {
public:
  explicit VerifyAfterEachPass(FuzzContext &fc) : fc(fc) {}
  void runAfterPass(Pass *pass, Operation *op) override {
    if (failed(verify(op)))
      fc.fail(("pass '" + pass->getArgument() +
               "' succeeded and left IR that does not verify")
                  .str(),
              op);
  }

private:
  FuzzContext &fc;
};
} // namespace

LogicalResult FuzzContext::run(ModuleOp module, llvm::StringRef pipeline) {
  PassManager pm(context.get(), ModuleOp::getOperationName());
  pm.enableVerifier(false);
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (failed(parsePassPipeline(pipeline, pm, os))) {
    if (verbose())
      llvm::errs() << "overlap fuzz: bad pipeline " << pipeline << ": "
                   << errors << "\n";
    diagnostics.push_back(errors);
    return failure();
  }
  pm.addInstrumentation(std::make_unique<VerifyAfterEachPass>(*this));
  LogicalResult result = pm.run(module);
  if (verbose()) {
    llvm::errs() << "overlap fuzz: " << pipeline << ": "
                 << (succeeded(result) ? "succeeded" : "failed") << "\n";
    if (succeeded(result))
      module->print(llvm::errs());
  }
  return result;
}

void FuzzContext::fail(llvm::StringRef what, Operation *module) {
  llvm::errs() << "overlap fuzz: " << what << "\n";
  for (const std::string &d : diagnostics)
    llvm::errs() << "  diagnostic: " << d << "\n";
  if (module) {
    OpPrintingFlags flags;
    flags.printGenericOpForm().assumeVerified();
    module->print(llvm::errs(), flags);
    llvm::errs() << "\n";
  }
  llvm::errs().flush();
  std::abort();
}

const std::vector<std::string> & ::overlap::fuzz::shippedProfileNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> found;
    std::string dir = ::overlap::planner::shippedProfilesDir();
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec))
      if (llvm::sys::path::extension(it->path()) == ".json")
        found.push_back(llvm::sys::path::stem(it->path()).str());
    if (found.empty()) {
      llvm::errs() << "overlap fuzz: no shipped profiles in '" << dir
                   << "' (build the overlap-profiles target)\n";
      std::abort();
    }
    std::sort(found.begin(), found.end());
    return found;
  }();
  return names;
}

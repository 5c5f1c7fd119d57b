//===- MlirFuzz.h - What the MLIR fuzz targets share ------------*- C++ -*-===//
//
// The fuzz targets that parse IR use the full registry of the tools
// (InitAllDialects.h, InitAllPasses.h), one fresh context per input (so
// that uniqued attributes and types do not pile up over millions of
// inputs), no threads, and diagnostics kept instead of printed: a
// diagnostic is a fine answer to any input; a crash, a sanitizer report or
// a pass that succeeds and leaves IR that does not verify is a finding.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_FUZZ_MLIRFUZZ_H
#define OVERLAP_FUZZ_MLIRFUZZ_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>
#include <vector>

namespace overlap {
namespace fuzz {

/// A context for one input, with the diagnostics it collects.
class FuzzContext {
public:
  FuzzContext();
  ~FuzzContext();

  mlir::MLIRContext &get() { return *context; }

  /// Parses `text` as a module (null when it does not parse).
  mlir::OwningOpRef<mlir::ModuleOp> parse(llvm::StringRef text);

  /// Runs the textual pass pipeline `pipeline` (anchored on builtin.module)
  /// on `module`, verifying after every pass that succeeded: a pass that
  /// succeeds and leaves IR that does not verify aborts, naming the pass.
  /// A pipeline that does not parse, or a pass that fails, is a failure.
  mlir::LogicalResult run(mlir::ModuleOp module, llvm::StringRef pipeline);

  /// Aborts with `what`, the diagnostics so far and `module` printed
  /// generically: for a property of the IR that must hold.
  [[noreturn]] void fail(llvm::StringRef what, mlir::Operation *module);

  const std::vector<std::string> &getDiagnostics() const { return diagnostics; }

private:
  std::unique_ptr<mlir::MLIRContext> context;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
  std::vector<std::string> diagnostics;
};

/// The names of the profiles the tools ship (the build's
/// share/overlap/profiles), sorted; never empty.
const std::vector<std::string> &shippedProfileNames();

} // namespace fuzz
} // namespace overlap

#endif // OVERLAP_FUZZ_MLIRFUZZ_H

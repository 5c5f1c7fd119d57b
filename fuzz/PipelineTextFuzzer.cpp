//===- PipelineTextFuzzer.cpp - Fuzz the passes on mutated IR ---*- C++ -*-===//
//
// Input: MLIR text (the seeds are the lit tests of the dialect and the
// passes, and the examples). What parses with the tools' registry goes
// through the whole of overlap-to-llvm for the host (overlap-pipeline with
// strategy=auto, which prices every strategy, then bufferize, schedule,
// runtime, llvm), as overlap-compile runs it. Diagnostics are fine; a
// crash, a sanitizer report or a pass that succeeds and leaves IR that
// does not verify is a finding (MlirFuzz.h).
//
// Upstream MLIR is not instrumented (Debian's libMLIR.so), so coverage
// guides the mutations towards what changes Overlap's own code: its
// dialect's parsers and verifiers, and its passes.
//
//===----------------------------------------------------------------------===//

#include "MlirFuzz.h"

#include "overlap/Compiler/Options.h"
#include "overlap/Compiler/Stages.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

#include <cstdint>
#include <string>

using namespace ::overlap::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  static const std::string pipeline = [] {
    std::string p = "builtin.module(";
    llvm::ListSeparator sep(", ");
    for (const mlir::overlap::compiler::Stage &stage :
         mlir::overlap::compiler::buildStages({}))
      p += (llvm::Twine(sep) + stage.text()).str();
    return p + ")";
  }();
  FuzzContext fc;
  mlir::OwningOpRef<mlir::ModuleOp> module = fc.parse(text);
  if (!module)
    return 0;
  (void)fc.run(*module, pipeline);
  return 0;
}

//===- Driver.h - The Overlap compiler driver, in process -------*- C++ -*-===//
//
// What a compiler built on Overlap does around the stages (Stages.h): a
// context with everything registered, the input, the entry, and the way out
// of MLIR (LLVM IR, optimization, an object file, a shared library linked
// against the runtime beside this library); the JIT is lib/Runner's
// (overlap/Runner/Jit.h). overlap-compile and overlap-run are flag
// parsing over these functions; the C API (overlap-c/Compiler.h) and the
// Python package call compileToFiles.
//
// Errors, in this library: a function whose failure is reported through
// MLIR diagnostics on the IR (the diagnostic is the error: runStages, which
// adds the name of the stage that failed, and repairInput) returns
// LogicalResult; everything else returns llvm::Error or llvm::Expected<T>
// carrying the message, not a `std::string &error` out-parameter or an
// error stream.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_COMPILER_DRIVER_H
#define OVERLAP_COMPILER_DRIVER_H

#include "overlap/Compiler/Options.h"
#include "overlap/Compiler/RemarkSetup.h"
#include "overlap/Compiler/Stages.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
class raw_pwrite_stream;
} // namespace llvm

namespace mlir {
class PassManager;

namespace overlap {
namespace compiler {

/// A context with the tools' dialects, interface models and passes
/// registered. The generic dump of a failing operation is off (diagnostics
/// point at the input) unless --mlir-print-op-on-diagnostic was given.
std::unique_ptr<mlir::MLIRContext> createContext();

/// An input file parsed in its own context (createContext, with the remarks
/// the options turn on): the context, the source, the handler that reports
/// the context's diagnostics against it (by the file's name and line), and
/// the module.
struct ParsedInput {
  std::unique_ptr<mlir::MLIRContext> context;
  std::shared_ptr<llvm::SourceMgr> source;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> diagnostics;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Reads `path` ("-" for stdin) and parses it in a new context with
/// `remarks` enabled. Errors: the remark options are wrong, the file cannot
/// be read, or it does not parse ("stage 'parse': cannot parse PATH", after the
/// parser's diagnostics went to the handler).
llvm::Expected<ParsedInput> parseInput(llvm::StringRef path,
                                       const RemarkOptions &remarks);

/// Keeps `entry` as the one public function with a body: other public
/// functions become private (so no C interface is emitted for them) and
/// symbol-dce drops those the entry does not call. With an empty name the
/// module must have exactly one public function with a body, which is the
/// entry. Returns the entry's name, or why there is none.
llvm::Expected<std::string> selectEntry(mlir::ModuleOp module,
                                        llvm::StringRef entry);

/// Initializes the native LLVM target once per process.
void initializeNativeTarget();

/// A TargetMachine for the host triple, position independent (so the
/// object can go into a shared library). `cpu` empty means "generic".
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createHostTargetMachine(llvm::StringRef cpu, unsigned optLevel);

/// Optimizes host LLVM IR at `optLevel` (0 to 3): the loop kernels of
/// overlap-outline-loops at that level, every other function (the host
/// glue: runtime calls) with optnone, so that compile time stays linear in
/// the program's size. LLVM's -time-passes reports the passes.
llvm::Error optimizeHostModule(llvm::Module &module, unsigned optLevel,
                               llvm::TargetMachine *tm);

/// Translates an LLVM-dialect module to LLVM IR for `tm`'s triple and data
/// layout and optimizes it at `optLevel` (0 to 3) (optimizeHostModule).
llvm::Expected<std::unique_ptr<llvm::Module>>
translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &context,
                  llvm::TargetMachine &tm, unsigned optLevel);

/// Emits `module` as an object file into `os`.
llvm::Error emitObject(llvm::Module &module, llvm::TargetMachine &tm,
                       llvm::raw_pwrite_stream &os);

/// The directory that holds liboverlap_runtime.so (and, where built,
/// liboverlap_runtime_cuda.so): the one that holds libOverlapCompiler.so,
/// for linking shared libraries against them.
std::string runtimeLibraryDir();

/// The directory of MLIR's runner-utility libraries
/// (libmlir_c_runner_utils.so: memrefCopy for non-contiguous copies).
std::string mlirRunnerUtilsDir();

/// Links `object` into the shared library `output` with the C compiler
/// `cc` (a name on PATH or a path): the runtime of `target`
/// (liboverlap_runtime.so, or liboverlap_runtime_cuda.so for cuda) from
/// runtimeLibraryDir() and, with `needsRunnerUtils`, MLIR's C runner
/// utilities. The library finds the runtime through an rpath of $ORIGIN
/// and the directory it was linked from (the installation's lib/ when the
/// compiler runs from an installation).
llvm::Error linkSharedLibrary(llvm::StringRef object, llvm::StringRef output,
                              llvm::StringRef target, bool needsRunnerUtils,
                              llvm::StringRef cc = "cc");

/// What compileToFiles produces.
enum class Emit { MLIR, LLVM, Object, SharedLibrary };

/// The driver's options beyond the pipeline's.
struct DriverOptions {
  CompileOptions compile;
  Emit emit = Emit::SharedLibrary;
  /// Entry function (empty: the only public function with a body).
  std::string entry;
  /// LLVM optimization level (0 to 3) and CPU ("" generic, "native").
  unsigned optLevel = 2;
  std::string cpu;
  /// C compiler that links shared libraries.
  std::string cc = "cc";
  /// The name compileToFiles gives its source text in diagnostics (the
  /// file it was read from): `NAME:line:col: error: ...`.
  std::string sourceName = "input";
};

/// The result of compileToFiles.
struct Artifact {
  /// Where the output was written.
  std::string path;
  /// The plans chosen, in the order of the ops (compileToFiles only).
  std::vector<PlanRecord> plans;
  /// Why ops were not overlapped (compileToFiles only).
  std::vector<MissedRecord> missed;
  /// What the caller should show (e.g. no signature could be embedded).
  std::vector<std::string> warnings;
};

/// Compiles `module` (already parsed, in a context from createContext) with
/// `options` and writes the result to `output` ("-": stdout, for text).
/// Stops after the stage `stopAfter` (emit MLIR only); `configure` is
/// called on each stage's PassManager (command-line IR printing, ...). The
/// passes' diagnostics go to the context's handlers; the returned error
/// says which stage failed.
llvm::Expected<Artifact> compileModule(
    ModuleOp module, llvm::StringRef output, const DriverOptions &options,
    llvm::StringRef stopAfter = "",
    llvm::function_ref<LogicalResult(PassManager &)> configure = nullptr);

/// Parses `source` (MLIR text), compiles it with `options` and writes the
/// result to `output` (for MLIR and LLVM IR: text; object and shared
/// library: binary). Objects and shared libraries carry the entry's
/// signature (overlap-exec and the loader run them). Diagnostics of the
/// passes are returned in the error's message, one per line.
llvm::Expected<Artifact> compileToFiles(llvm::StringRef source,
                                        llvm::StringRef output,
                                        const DriverOptions &options);

/// Checks `cpu` ("native", "" or a CPU name the host's LLVM target knows);
/// the message names --mcpu's accepted values when it does not.
llvm::Error checkHostCPU(llvm::StringRef cpu);

} // namespace compiler
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_COMPILER_DRIVER_H

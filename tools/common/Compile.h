//===- Compile.h - The Overlap compile pipeline, in process -----*- C++ -*-===//
//
// The pipeline that overlap-compile and overlap-run share, from tensor IR
// (linalg + shard, or overlap fused ops) to the LLVM dialect, LLVM IR and an
// object file. It runs in stages, each a textual pipeline parsed with
// mlir::parsePassPipeline, so that an error names the stage it came from.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_TOOLS_COMMON_COMPILE_H
#define OVERLAP_TOOLS_COMMON_COMPILE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

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
namespace tools {

/// What the pipeline is asked to do.
struct CompileOptions {
  /// Hardware profile for the Planner: a JSON path or a name in profiles/.
  std::string profile = "h100-nvlink-datasheet";
  /// Tiling strategy: none, uniform:N, mc2, optimal, waves, ficco, auto.
  std::string strategy = "auto";
  /// Runtime backend: host or cuda.
  std::string target = "host";
  /// overlap-schedule-streams{testing-drop-waits}: no waits (chaos tests).
  bool testingDropWaits = false;
  /// target=cuda: the GPU the kernels are compiled for, the PTX features
  /// (CUDA 13's ptxas needs +ptx80 or newer for sm_90a) and the form
  /// gpu-module-to-binary embeds (fatbin: SASS for the chip plus PTX;
  /// isa: PTX only, compiled by the driver when the program loads).
  std::string gpuChip = "sm_90a";
  std::string gpuFeatures = "+ptx80";
  std::string gpuFormat = "fatbin";
};

/// One stage of the pipeline: a name for messages and --stop-after-stage, and
/// the textual pipeline it runs (anchored on builtin.module).
struct Stage {
  std::string name;
  std::string description;
  std::string pipeline;
};

/// The stages, in order: tensor, bufferize, schedule, [kernels: target=cuda
/// only], runtime, llvm.
std::vector<Stage> buildStages(const CompileOptions &options);

/// A context with the tools' dialects, interface models and passes
/// registered. The generic dump of a failing operation is off (diagnostics
/// point at the input) unless --mlir-print-op-on-diagnostic was given.
std::unique_ptr<mlir::MLIRContext> createToolContext();

/// Reads `path` ("-" for stdin) into a new source manager; on failure
/// returns null and sets `error`.
std::shared_ptr<llvm::SourceMgr> loadSource(llvm::StringRef path,
                                            std::string &error);

/// The whole pipeline as one `builtin.module(...)` string (for --help, docs
/// and --print-pipeline).
std::string describePipeline(const CompileOptions &options);

/// Runs the stages on `module` in order, stopping after the stage named
/// `stopAfter` (empty: all of them). The passes report their own
/// diagnostics through the context; on failure this writes
/// "<tool>: error: stage '<name>' (<description>) failed" to `errs`.
/// `configure` is called on each stage's PassManager before it runs (for
/// the command-line pass-manager options, e.g. IR printing).
mlir::LogicalResult runStages(
    mlir::ModuleOp module, const CompileOptions &options,
    llvm::StringRef stopAfter, llvm::StringRef tool, llvm::raw_ostream &errs,
    llvm::function_ref<mlir::LogicalResult(mlir::PassManager &)> configure =
        nullptr);

/// Keeps `entry` as the one public function with a body: other public
/// functions become private (so no C interface is emitted for them) and
/// symbol-dce drops those the entry does not call. With an empty name the
/// module must have exactly one public function with a body, which is the
/// entry. Returns the entry's name.
mlir::FailureOr<std::string> selectEntry(mlir::ModuleOp module,
                                         llvm::StringRef entry,
                                         llvm::StringRef tool,
                                         llvm::raw_ostream &errs);

/// Initializes the native LLVM target once per process.
void initializeNativeTarget();

/// Whether the host target knows CPU `cpu` (empty: "generic"). LLVM only
/// warns about an unknown CPU and then fails in code generation without
/// naming it; on failure this says which CPU and the closest known name.
mlir::LogicalResult checkHostCPU(llvm::StringRef cpu, llvm::raw_ostream &errs);

/// A TargetMachine for the host triple, position independent (so the
/// object can go into a shared library). `cpu` empty means "generic"; an
/// unknown CPU is an error (checkHostCPU).
std::unique_ptr<llvm::TargetMachine>
createHostTargetMachine(llvm::StringRef cpu, unsigned optLevel,
                        llvm::raw_ostream &errs);

/// Translates an LLVM-dialect module to LLVM IR for `tm`'s triple and data
/// layout and optimizes it at `optLevel` (0 to 3).
std::unique_ptr<llvm::Module> translateToLLVMIR(mlir::ModuleOp module,
                                                llvm::LLVMContext &context,
                                                llvm::TargetMachine &tm,
                                                unsigned optLevel,
                                                llvm::raw_ostream &errs);

/// Emits `module` as an object file into `os`.
mlir::LogicalResult emitObject(llvm::Module &module, llvm::TargetMachine &tm,
                               llvm::raw_pwrite_stream &os,
                               llvm::raw_ostream &errs);

/// The directory that holds liboverlap_runtime.so (the one this process
/// loaded), for linking shared libraries against it.
std::string runtimeLibraryDir();

/// The directory of MLIR's runner-utility libraries
/// (libmlir_c_runner_utils.so: memrefCopy for non-contiguous copies).
std::string mlirRunnerUtilsDir();

} // namespace tools
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_TOOLS_COMMON_COMPILE_H

//===- Stages.h - The Overlap compile stages --------------------*- C++ -*-===//
//
// From tensor IR (linalg + shard, or overlap fused ops) to the LLVM dialect,
// in stages: tensor, bufferize, schedule, [kernels: target=cuda], runtime,
// llvm. Each stage is a textual pipeline of registered passes; the whole is
// registered as the pass pipeline `overlap-to-llvm{...}`, whose options are
// CompileOptions' fields, so `mlir-opt --pass-pipeline=...` (overlap-opt, or
// a stock mlir-opt with the plugin) runs exactly what the driver runs.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_COMPILER_STAGES_H
#define OVERLAP_COMPILER_STAGES_H

#include "overlap/Compiler/Options.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
class PassManager;

namespace overlap {
namespace compiler {

/// One stage of the pipeline: a name for messages and --stop-after-stage,
/// and what adds its passes to a pass manager anchored on builtin.module
/// (built in code: no pass is looked up by name, so compiling needs no
/// pass registered).
struct Stage {
  std::string name;
  std::string description;
  std::function<void(OpPassManager &)> populate;
};

/// The stages, in order: tensor, bufferize, schedule, [kernels: target=cuda
/// only], runtime, llvm.
std::vector<Stage> buildStages(const CompileOptions &options);

/// The names of the stages for `options`, comma separated (for messages).
std::string stageNames(const CompileOptions &options);

/// The whole pipeline as one `builtin.module(...)` string, every pass with
/// its options (for --print-pipeline; mlir-opt --pass-pipeline runs it).
std::string describePipeline(const CompileOptions &options);

/// Adds the stages up to and including `stopAfter` (all when empty) to
/// `pm`, which must be anchored on builtin.module. Fails (with the reason in
/// `error`) when the options are invalid or `stopAfter` names no stage.
LogicalResult buildPipeline(OpPassManager &pm, const CompileOptions &options,
                            llvm::StringRef stopAfter, std::string &error);

/// Runs the stages on `module` in order, stopping after the stage named
/// `stopAfter` (empty: all of them). The passes report their own
/// diagnostics through the context; on failure this writes
/// "<tool>: error: stage '<name>' (<description>) failed" to `errs`.
/// `configure` is called on each stage's PassManager before it runs (for
/// the command-line pass-manager options, e.g. IR printing).
LogicalResult runStages(
    ModuleOp module, const CompileOptions &options, llvm::StringRef stopAfter,
    llvm::StringRef tool, llvm::raw_ostream &errs,
    llvm::function_ref<LogicalResult(PassManager &)> configure = nullptr);

/// The options of the registered pipeline `overlap-to-llvm`: CompileOptions'
/// fields, with CompileOptions' defaults.
struct CompilePipelineOptions
    : public PassPipelineOptions<CompilePipelineOptions> {
  PassOptions::Option<std::string> profile{
      *this, "profile",
      llvm::cl::desc("Hardware profile: a JSON path or a shipped name"),
      llvm::cl::init(CompileOptions().profile)};
  PassOptions::Option<std::string> strategy{
      *this, "strategy",
      llvm::cl::desc("Tiling strategy: none, uniform:N, mc2, optimal, waves, "
                     "ficco, auto"),
      llvm::cl::init(CompileOptions().strategy)};
  PassOptions::Option<std::string> target{
      *this, "target", llvm::cl::desc("Runtime backend: host or cuda"),
      llvm::cl::init(CompileOptions().target)};
  PassOptions::Option<std::string> stopAfter{
      *this, "stop-after-stage",
      llvm::cl::desc("Stop after this stage (tensor, bufferize, schedule, "
                     "kernels, runtime, llvm)"),
      llvm::cl::init("")};
  PassOptions::Option<bool> testingDropWaits{
      *this, "testing-drop-waits",
      llvm::cl::desc("Testing only: no waits between the streams"),
      llvm::cl::init(CompileOptions().testingDropWaits)};
  PassOptions::Option<std::string> gpuChip{
      *this, "gpu-chip", llvm::cl::desc("target=cuda: the GPU (sm_90a)"),
      llvm::cl::init(CompileOptions().gpuChip)};
  PassOptions::Option<std::string> gpuFeatures{
      *this, "gpu-features", llvm::cl::desc("target=cuda: PTX features"),
      llvm::cl::init(CompileOptions().gpuFeatures)};
  PassOptions::Option<std::string> gpuFormat{
      *this, "gpu-format",
      llvm::cl::desc("target=cuda: fatbin, bin or isa"),
      llvm::cl::init(CompileOptions().gpuFormat)};

  CompileOptions toCompileOptions() const;
};

/// Registers `overlap-to-llvm`.
void registerCompilerPipelines();

} // namespace compiler
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_COMPILER_STAGES_H

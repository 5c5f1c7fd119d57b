//===- Stages.h - The Overlap compile stages --------------------*- C++ -*-===//
//
// From tensor IR (linalg + shard, or overlap fused ops) to the LLVM dialect,
// in stages: tensor, bufferize, schedule, [kernels: target=cuda], runtime,
// llvm. Each stage adds its passes in code (Stage::populate, from
// CompileOptions); the whole is registered as the pass pipeline
// `overlap-to-llvm{...}` over the same builders, whose options are
// CompileOptions.def's rows, so `mlir-opt --pass-pipeline=...` (overlap-opt,
// or a stock mlir-opt with the plugin) runs exactly what the driver runs.
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
  /// Its passes as a textual pipeline on builtin.module without the anchor
  /// ("overlap-raise,...,overlap-check-collectives"): what mlir-opt's
  /// --pass-pipeline takes inside builtin.module(...).
  std::string text() const;
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
/// `pm`, which must be anchored on builtin.module. Fails (with the reason)
/// when the options are invalid or `stopAfter` names no stage.
llvm::Error buildPipeline(OpPassManager &pm, const CompileOptions &options,
                          llvm::StringRef stopAfter);

/// Runs the stages on `module` in order, stopping after the stage named
/// `stopAfter` (empty: all of them). The passes report their own
/// diagnostics through the context; on failure this writes
/// "<tool>: error: stage '<name>' (<description>) failed" to `errs`.
/// `configure` is called on each stage's PassManager before it runs (for
/// the command-line pass-manager options, e.g. IR printing).
LogicalResult
runStages(ModuleOp module, const CompileOptions &options,
          llvm::StringRef stopAfter, llvm::StringRef tool,
          llvm::raw_ostream &errs,
          llvm::function_ref<LogicalResult(PassManager &)> configure = nullptr);

/// The options of the registered pipeline `overlap-to-llvm`: the rows of
/// CompileOptions.def, with CompileOptions' defaults, and stop-after-stage.
struct CompilePipelineOptions
    : public PassPipelineOptions<CompilePipelineOptions> {
  // OVERLAP_COMPILE_OPTION_TYPE_<KIND>: Options.h.
#define OVERLAP_COMPILE_OPTION(FIELD, FLAG, KIND, DEFAULT, HELP)               \
  PassOptions::Option<OVERLAP_COMPILE_OPTION_TYPE_##KIND> FIELD{               \
      *this, FLAG, llvm::cl::desc(HELP),                                       \
      llvm::cl::init(CompileOptions().FIELD)};
#include "overlap/Compiler/CompileOptions.def"
  PassOptions::Option<std::string> stopAfter{
      *this, "stop-after-stage",
      llvm::cl::desc("Stop after this stage (tensor, bufferize, schedule, "
                     "kernels, runtime, llvm)"),
      llvm::cl::init("")};

  CompileOptions toCompileOptions() const;
};

/// Registers `overlap-to-llvm`.
void registerCompilerPipelines();

} // namespace compiler
} // namespace overlap
} // namespace mlir

#endif // OVERLAP_COMPILER_STAGES_H

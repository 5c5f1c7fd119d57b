//===- Passes.h - Overlap dialect passes --------------------*- C++ -*-===//
//
// Declares the passes of the `overlap` dialect and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_DIALECT_OVERLAP_TRANSFORMS_PASSES_H
#define OVERLAP_DIALECT_OVERLAP_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/Error.h"

#include "overlap/Dialect/Overlap/IR/OverlapOps.h"
#include "overlap/Planner/Defaults.h"
#include <functional>
#include <memory>
#include <string>

namespace mlir {
namespace arith {
class ArithDialect;
} // namespace arith
namespace cf {
class ControlFlowDialect;
} // namespace cf
namespace func {
class FuncDialect;
} // namespace func
namespace linalg {
class LinalgDialect;
} // namespace linalg
namespace scf {
class SCFDialect;
} // namespace scf
namespace tensor {
class TensorDialect;
} // namespace tensor

namespace overlap {

#define GEN_PASS_DECL
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"

/// Options of `overlap-pipeline`, forwarded to its passes.
struct OverlapPipelineOptions
    : public PassPipelineOptions<OverlapPipelineOptions> {
  PassOptions::Option<std::string> profile{
      *this, "profile",
      llvm::cl::desc("Hardware profile (path or name in profiles/)"),
      llvm::cl::init(::overlap::planner::kDefaultProfile)};
  PassOptions::Option<std::string> strategy{
      *this, "strategy",
      llvm::cl::desc("Tiling strategy: " OVERLAP_STRATEGY_LIST),
      llvm::cl::init(::overlap::planner::kDefaultStrategy)};
  PassOptions::Option<int64_t> ranks{
      *this, "ranks", llvm::cl::desc("Group size override (0: from the grid)"),
      llvm::cl::init(0)};
  PassOptions::Option<double> fastMemory{
      *this, "fast-memory",
      llvm::cl::desc("Fast-memory elements for chain fusion"),
      llvm::cl::init(::overlap::planner::kDefaultFastMemory)};
  PassOptions::Option<bool> moveCollectives{
      *this, "move-collectives",
      llvm::cl::desc("Move sum all-reduces past shrinking products "
                     "(changes rounding)"),
      llvm::cl::init(false)};
};

/// raise -> reorder-chains -> plan -> decompose -> lower-collectives ->
/// check-collectives.
void buildOverlapPipeline(OpPassManager &pm,
                          const OverlapPipelineOptions &options);

/// Success when `pm` is anchored on builtin.module (where the module passes
/// of `pipeline` can be added); otherwise reports through `errorHandler`
/// what to write instead (a pipeline nested under func.func would abort the
/// process when its passes are added).
LogicalResult checkModuleAnchor(
    OpPassManager &pm, llvm::StringRef pipeline,
    llvm::function_ref<LogicalResult(const llvm::Twine &)> errorHandler);

/// Registers `name` as a pass pipeline on builtin.module with the options
/// `OptionsT`, which `build` turns into passes. Through the lower-level
/// registration: a nesting under another op (checkModuleAnchor), options
/// that do not parse, or an error of `build` fail the pipeline's parsing
/// with a message "<name>: ..." (the typed registration would abort the
/// process when the passes are added).
template <typename OptionsT>
void registerModulePipeline(
    llvm::StringRef name, llvm::StringRef description,
    std::function<llvm::Error(OpPassManager &, const OptionsT &)> build) {
  registerPassPipeline(
      name, description,
      [pipeline = name.str(), build](
          OpPassManager &pm, llvm::StringRef text,
          llvm::function_ref<LogicalResult(const llvm::Twine &)> errorHandler)
          -> LogicalResult {
        if (failed(checkModuleAnchor(pm, pipeline, errorHandler)))
          return failure();
        std::unique_ptr<OptionsT> options = OptionsT::createFromString(text);
        if (!options)
          return errorHandler(pipeline + ": cannot parse the options '" + text +
                              "'");
        if (llvm::Error error = build(pm, *options))
          return errorHandler(pipeline + ": " +
                              llvm::toString(std::move(error)));
        return success();
      },
      [](llvm::function_ref<void(const mlir::detail::PassOptions &)> print) {
        OptionsT options;
        print(options);
      });
}

/// Registers `overlap-pipeline`.
void registerOverlapPipelines();

#define GEN_PASS_REGISTRATION
#include "overlap/Dialect/Overlap/Transforms/Passes.h.inc"

} // namespace overlap
} // namespace mlir

#endif // OVERLAP_DIALECT_OVERLAP_TRANSFORMS_PASSES_H

// A downstream compiler: registers Overlap's dialects and passes in its own
// context, runs the registered pipeline on an upstream module, then
// compiles the file to a shared library with Overlap's driver.
#include "overlap/Compiler/Driver.h"
#include "overlap/InitAllDialects.h"
#include "overlap/InitAllPasses.h"
#include "overlap/Dialect/Overlap/Transforms/Passes.h"
#include "overlap/Dialect/Overlap/Transforms/Transforms.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    llvm::errs() << "usage: my-compiler INPUT.mlir OUTPUT.so\n";
    return 2;
  }
  auto file = llvm::MemoryBuffer::getFile(argv[1]);
  if (!file) {
    llvm::errs() << "cannot read " << argv[1] << "\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  mlir::overlap::registerAllDialects(registry);
  mlir::overlap::registerAllPasses();
  mlir::MLIRContext context(registry);
  auto module =
      mlir::parseSourceString<mlir::ModuleOp>((*file)->getBuffer(), &context);
  if (!module)
    return 1;
  mlir::PassManager pm(&context, mlir::ModuleOp::getOperationName());
  // The passes to add inside `pm` (anchored on builtin.module).
  if (mlir::failed(mlir::parsePassPipeline(
          "overlap-pipeline{strategy=uniform:2}", pm)) ||
      mlir::failed(pm.run(*module)))
    return 1;
  int tiles = 0;
  module->walk([&](mlir::Operation *op) {
    if (op->getName().getStringRef() == "overlap.reduce_scatter" ||
        op->getName().getStringRef() == "overlap.all_reduce")
      ++tiles;
  });
  llvm::outs() << "tile collectives after overlap-pipeline: " << tiles << "\n";

  // The same rules as patterns in our own rewrites: raise, plan (the pass),
  // decompose.
  auto again =
      mlir::parseSourceString<mlir::ModuleOp>((*file)->getBuffer(), &context);
  if (!again)
    return 1;
  mlir::RewritePatternSet raise(&context);
  mlir::overlap::populateOverlapRaisePatterns(raise);
  if (mlir::failed(mlir::applyPatternsGreedily(*again, std::move(raise))))
    return 1;
  mlir::PassManager plan(&context, mlir::ModuleOp::getOperationName());
  mlir::overlap::OverlapPlanOptions planOptions;
  planOptions.strategy = "uniform:2";
  plan.addPass(mlir::overlap::createOverlapPlan(planOptions));
  if (mlir::failed(plan.run(*again)))
    return 1;
  mlir::RewritePatternSet decompose(&context);
  mlir::overlap::populateOverlapDecomposePatterns(decompose);
  if (mlir::failed(mlir::applyPatternsGreedily(*again, std::move(decompose))))
    return 1;
  int patternTiles = 0;
  again->walk([&](mlir::Operation *op) {
    if (op->getName().getStringRef() == "overlap.tiles")
      ++patternTiles;
  });
  llvm::outs() << "tiled ops with the patterns: " << patternTiles << "\n";

  mlir::overlap::compiler::DriverOptions options;
  options.compile.strategy = "uniform:2";
  auto artifact = mlir::overlap::compiler::compileToFiles(
      (*file)->getBuffer(), argv[2], options);
  if (!artifact) {
    llvm::errs() << llvm::toString(artifact.takeError()) << "\n";
    return 1;
  }
  llvm::outs() << "wrote " << artifact->path << " with "
               << artifact->plans.size() << " plan(s)\n";
  for (const auto &plan : artifact->plans)
    llvm::outs() << "plan at " << plan.location << ": "
                 << *plan.plan.get("tiles") << "\n";
  return 0;
}

// A downstream JIT over Overlap::Runner: compiles the module with Overlap's
// stages, JITs it with the runtime's C ABI registered, and finds its entry.
#include "overlap/Compiler/Driver.h"
#include "overlap/Compiler/Stages.h"
#include "overlap/Runner/Jit.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    llvm::errs() << "usage: my-jit INPUT.mlir ENTRY\n";
    return 2;
  }
  auto file = llvm::MemoryBuffer::getFile(argv[1]);
  if (!file)
    return 2;
  std::unique_ptr<mlir::MLIRContext> context =
      mlir::overlap::compiler::createContext();
  auto module = mlir::parseSourceString<mlir::ModuleOp>((*file)->getBuffer(),
                                                        context.get());
  if (!module)
    return 1;
  mlir::overlap::compiler::CompileOptions options;
  options.strategy = "uniform:2";
  if (mlir::failed(mlir::overlap::compiler::runStages(*module, options, "",
                                                      "my-jit", llvm::errs())))
    return 1;
  auto engine = mlir::overlap::runner::createJit(*module, /*optLevel=*/2);
  if (!engine) {
    llvm::errs() << llvm::toString(engine.takeError()) << "\n";
    return 1;
  }
  mlir::overlap::runner::registerRuntimeSymbols(**engine,
                                                /*poisonAllocations=*/false);
  std::string symbol = std::string("_mlir_ciface_") + argv[2];
  auto entry = (*engine)->lookup(symbol);
  if (!entry) {
    llvm::errs() << llvm::toString(entry.takeError()) << "\n";
    return 1;
  }
  llvm::outs() << "jit: " << symbol << " found\n";
  return 0;
}

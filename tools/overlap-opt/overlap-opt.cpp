//===- overlap-opt.cpp - Overlap's mlir-opt ---------------------*- C++ -*-===//
//
// mlir-opt with Overlap's dialects and passes (InitAllDialects.h,
// InitAllPasses.h); everything else is MlirOptMain's, including the remark
// flags (--remarks-filter=overlap, --remark-format, --remarks-output-file).
//
//===----------------------------------------------------------------------===//

#include "overlap/InitAllDialects.h"
#include "overlap/InitAllPasses.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::overlap::registerAllDialects(registry);
  mlir::overlap::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "Overlap optimizer: compute/communication overlap for "
      "tensor-parallel matmuls\n",
      registry));
}

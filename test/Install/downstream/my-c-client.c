/* A C client of the installed C API: registers everything, parses upstream
 * input, runs overlap-to-llvm on it. */
#include "mlir-c/IR.h"
#include "overlap-c/Compiler.h"
#include "overlap-c/Dialects.h"
#include "overlap-c/Passes.h"

#include <stdio.h>

static const char *kInput =
    "shard.grid @tp(shape = 2)\n"
    "func.func @f(%a: tensor<512x32xf32>, %b: tensor<32x16xf32>,\n"
    "             %c: tensor<512x16xf32>) -> tensor<512x16xf32> {\n"
    "  %m = linalg.matmul ins(%a, %b : tensor<512x32xf32>, tensor<32x16xf32>)\n"
    "       outs(%c : tensor<512x16xf32>) -> tensor<512x16xf32>\n"
    "  %r = shard.all_reduce %m on @tp grid_axes = [0]\n"
    "       : tensor<512x16xf32> -> tensor<512x16xf32>\n"
    "  return %r : tensor<512x16xf32>\n"
    "}\n";

int main(void) {
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirOverlapRegisterAllDialects(registry);
  MlirContext ctx = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  mlirRegisterOverlapPasses();
  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kInput));
  if (mlirModuleIsNull(module))
    return 1;
  MlirLogicalResult result = mlirOverlapRunPipeline(
      module, mlirStringRefCreateFromCString("strategy=uniform:2"));
  printf("C client: overlap-to-llvm %s\n",
         mlirLogicalResultIsSuccess(result) ? "succeeded" : "failed");
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return mlirLogicalResultIsSuccess(result) ? 0 : 1;
}

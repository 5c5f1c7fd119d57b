/*===- overlap-capi-test.c - Overlap's C API, from C ---------------------===*\
|*                                                                            *|
|* Registers Overlap's dialects and passes through overlap-c, parses the      *|
|* upstream shard + linalg input given as argv[1], runs overlap-pipeline and  *|
|* overlap-to-llvm through MLIR's C pass manager, compiles the same text to a *|
|* shared library with overlapCompile (argv[2]), and shows that errors come   *|
|* back as text. test/CAPI/capi.test checks the output.                       *|
\*===----------------------------------------------------------------------===*/

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"
#include "overlap-c/Compiler.h"
#include "overlap-c/Dialects.h"
#include "overlap-c/Passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *readFile(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)size + 1);
  if (text && fread(text, 1, (size_t)size, f) != (size_t)size) {
    free(text);
    text = NULL;
  }
  if (text)
    text[size] = '\0';
  fclose(f);
  return text;
}

static void printToFile(MlirStringRef chunk, void *userData) {
  fwrite(chunk.data, 1, chunk.length, (FILE *)userData);
}

/* Counts the occurrences of `needle` in the module's text. */
static int countInModule(MlirModule module, const char *needle) {
  char *buffer = NULL;
  size_t size = 0;
  FILE *memory = open_memstream(&buffer, &size);
  mlirOperationPrint(mlirModuleGetOperation(module), printToFile, memory);
  fclose(memory);
  int count = 0;
  for (const char *p = buffer; (p = strstr(p, needle)); p += strlen(needle))
    ++count;
  free(buffer);
  return count;
}

static int runPipeline(MlirContext ctx, MlirModule module, const char *text) {
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  MlirLogicalResult parsed = mlirParsePassPipeline(
      opm, mlirStringRefCreateFromCString(text), printToFile, stderr);
  int ok = mlirLogicalResultIsSuccess(parsed) &&
           mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(
               pm, mlirModuleGetOperation(module)));
  mlirPassManagerDestroy(pm);
  return ok;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: overlap-capi-test INPUT.mlir OUTPUT.so\n");
    return 2;
  }
  char *source = readFile(argv[1]);
  if (!source) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }

  MlirDialectHandle handle = mlirGetDialectHandle__overlap__();
  MlirStringRef ns = mlirDialectHandleGetNamespace(handle);
  printf("dialect: %.*s\n", (int)ns.length, ns.data);

  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirOverlapRegisterAllDialects(registry);
  MlirContext ctx = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  mlirRegisterOverlapPasses();

  /* Upstream input: shard.grid, shard.all_reduce, linalg.matmul. */
  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(source));
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "the input does not parse\n");
    return 1;
  }
  printf("parsed: shard collectives %d\n",
         countInModule(module, "shard.all_reduce"));
  if (!runPipeline(ctx, module,
                   "builtin.module(overlap-pipeline{strategy=uniform:2})")) {
    fprintf(stderr, "overlap-pipeline failed\n");
    return 1;
  }
  printf("overlap-pipeline: tile all-reduces %d\n",
         countInModule(module, "overlap.all_reduce"));
  if (mlirLogicalResultIsFailure(mlirOverlapRunPipeline(
          module, mlirStringRefCreateFromCString("strategy=uniform:2")))) {
    fprintf(stderr, "overlap-to-llvm failed\n");
    return 1;
  }
  printf("overlap-to-llvm: runtime calls %d\n",
         countInModule(module, "llvm.call @overlap_all_reduce"));
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);

  OverlapCompileOptions options = overlapCompileOptionsDefault();
  printf("defaults: profile %s, strategy %s, target %s\n", options.profile,
         options.strategy, options.target);
  options.strategy = "uniform:2";
  OverlapCompileResult *result =
      overlapCompile(mlirStringRefCreateFromCString(source),
                     mlirStringRefCreateFromCString(argv[2]), &options);
  if (!overlapCompileResultSucceeded(result)) {
    MlirStringRef error = overlapCompileResultError(result);
    fprintf(stderr, "overlapCompile: %.*s\n", (int)error.length, error.data);
    return 1;
  }
  MlirStringRef plans = overlapCompileResultPlansJSON(result);
  printf("compiled: %s\nplans: %.*s\n", argv[2], (int)plans.length,
         plans.data);
  overlapCompileResultDestroy(result);

  options.target = "tpu";
  result = overlapCompile(mlirStringRefCreateFromCString(source),
                          mlirStringRefCreateFromCString(argv[2]), &options);
  MlirStringRef error = overlapCompileResultError(result);
  printf("bad target: %s: %.*s\n",
         overlapCompileResultSucceeded(result) ? "succeeded" : "failed",
         (int)error.length, error.data);
  overlapCompileResultDestroy(result);

  /* Every accessor is NULL-safe. */
  MlirStringRef nullError = overlapCompileResultError(NULL);
  MlirStringRef nullPlans = overlapCompileResultPlansJSON(NULL);
  printf("null result: %s, error '%.*s', plans %.*s\n",
         overlapCompileResultSucceeded(NULL) ? "succeeded" : "failed",
         (int)nullError.length, nullError.data ? nullError.data : "",
         (int)nullPlans.length, nullPlans.data);
  overlapCompileResultDestroy(NULL);
  free(source);
  return 0;
}

/*===- overlap-capi-test.c - Overlap's C API, from C ---------------------===*\
|*                                                                            *|
|* Registers Overlap's dialects and passes through overlap-c, parses the      *|
|* upstream shard + linalg input given as argv[1], runs overlap-pipeline and  *|
|* overlap-to-llvm through MLIR's C pass manager, compiles the same text to a *|
|* shared library with overlapCompile (argv[2]), and shows that errors come   *|
|* back as text. test/CAPI/capi.test checks the output.                       *|
\*===----------------------------------------------------------------------===*/

#include "mlir-c/Diagnostics.h"
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
/* Diagnostics on stdout, one a line, for FileCheck. */
static MlirLogicalResult printDiagnostic(MlirDiagnostic diagnostic,
                                         void *userData) {
  (void)userData;
  printf("diagnostic: ");
  mlirDiagnosticPrint(diagnostic, printToFile, stdout);
  printf("\n");
  return mlirLogicalResultSuccess();
}

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
           mlirLogicalResultIsSuccess(
               mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module)));
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

  /* Options text that would close the braces and add passes (here one that
   * empties the module) is refused, naming the option. */
  module = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(source));
  MlirDiagnosticHandlerID handler =
      mlirContextAttachDiagnosticHandler(ctx, printDiagnostic, NULL, NULL);
  MlirLogicalResult spliced = mlirOverlapRunPipeline(
      module, mlirStringRefCreateFromCString(
                  "strategy=none}, symbol-privatize, symbol-dce, "
                  "overlap-to-llvm{target=host"));
  printf("splice: %s, shard collectives left %d\n",
         mlirLogicalResultIsSuccess(spliced) ? "succeeded" : "failed",
         countInModule(module, "shard.all_reduce"));
  mlirContextDetachDiagnosticHandler(ctx, handler);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);

  OverlapCompileOptions options = overlapCompileOptionsDefault();
  printf("defaults: profile %s, strategy %s, target %s\n", options.profile,
         options.strategy, options.target);
  options.strategy = "uniform:2";
  size_t length = strlen(source);
  OverlapCompileResult *result = NULL;
  char *why = NULL;
  int status = overlapCompile(source, length, argv[2], &options, &result, &why);
  if (status != 0) {
    fprintf(stderr, "overlapCompile: %d: %s\n", status, why ? why : "");
    return 1;
  }
  printf("compiled: %s\nplans: %s\nwarnings: '%s'\n", argv[2],
         overlapCompileResultPlansJSON(result),
         overlapCompileResultWarnings(result));
  overlapCompileResultDestroy(result);

  /* Bad input is status 2, said in the messages; *result stays NULL. */
  options.target = "tpu";
  status = overlapCompile(source, length, argv[2], &options, &result, &why);
  printf("bad target: %d, result %s: %s\n", status, result ? "set" : "NULL",
         why);
  overlapFree(why);

  /* Options laid out by another header are refused, not misread. */
  OverlapCompileOptions other = overlapCompileOptionsDefault();
  other.size = 8;
  status = overlapCompile(source, length, argv[2], &other, NULL, &why);
  printf("other layout: %d: %s\n", status, why);
  overlapFree(why);
  /* Options by their flag names, the one declaration's. */
  OverlapCompileOptions named = overlapCompileOptionsDefault();
  status = overlapCompileOptionsSet(&named, "gpu-chip", "sm_80", &why);
  printf("set gpu-chip: %d %s -> %s\n", status, why ? why : "ok",
         named.gpuChip);
  overlapFree(why);
  status = overlapCompileOptionsSet(&named, "testing-drop-waits", "true", &why);
  printf("set testing-drop-waits: %d %s -> %d\n", status, why ? why : "ok",
         (int)named.testingDropWaits);
  overlapFree(why);
  status = overlapCompileOptionsSet(&named, "stratgy", "mc2", &why);
  printf("set stratgy: %d %s\n", status, why ? why : "ok");
  overlapFree(why);
  status =
      overlapCompileOptionsSet(&named, "testing-drop-waits", "maybe", NULL);
  printf("set testing-drop-waits maybe: %d\n", status);
  printf("layout: %s\n", overlapCompileOptionsLayout());

  /* An output that cannot be written is a failed compile (1), not the end
   * of the process (LLVM's fatal "IO failure on output stream"). */
  options.target = "host";
  options.emit = OVERLAP_EMIT_MLIR;
  status = overlapCompile(source, length, "/dev/full", &options, &result, &why);
  printf("full disk: %d, result %s: %s\n", status, result ? "set" : "NULL",
         why);
  overlapFree(why);

  /* A library that overlap-exec cannot run says so in the warnings. */
  options.emit = OVERLAP_EMIT_OBJECT;
  const char *two = "func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                    "  return %x : tensor<4xf32>\n}\n"
                    "func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                    "  return %x : tensor<4xf32>\n}\n";
  status =
      overlapCompile(two, strlen(two), "/dev/null", &options, &result, &why);
  printf("two entries: %d, messages %s, warnings: %s", status,
         why ? why : "NULL", overlapCompileResultWarnings(result));
  overlapCompileResultDestroy(result);

  /* Every accessor is NULL-safe, and so is every out-parameter. */
  printf("null result: plans %s, warnings '%s', missed %s\n",
         overlapCompileResultPlansJSON(NULL),
         overlapCompileResultWarnings(NULL),
         overlapCompileResultMissedJSON(NULL));
  overlapCompileResultDestroy(NULL);
  printf("null source: %d\n",
         overlapCompile(NULL, 0, "/dev/null", &options, NULL, NULL));
  overlapFree(NULL);
  free(source);
  return 0;
}

/*===- overlap-c/Compiler.h - The Overlap compiler from C ---------*- C -*-===*\
|*                                                                            *|
|* One call from MLIR text to a file: MLIR after the pipeline, LLVM IR, an    *|
|* object, or a shared library linked against the Overlap runtime (what       *|
|* overlap-compile does, through the same driver). The result says what went  *|
|* wrong, or which plans the Planner chose (JSON).                            *|
\*===----------------------------------------------------------------------===*/

#ifndef OVERLAP_C_COMPILER_H
#define OVERLAP_C_COMPILER_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  OVERLAP_EMIT_MLIR = 0,
  OVERLAP_EMIT_LLVM = 1,
  OVERLAP_EMIT_OBJECT = 2,
  OVERLAP_EMIT_SHARED_LIBRARY = 3
} OverlapEmit;

/** The compile options; overlapCompileOptionsDefault() gives the defaults
 *  (the same as overlap-compile's). A null string keeps the default. The
 *  pipeline's options are the rows of overlap/Compiler/CompileOptions.def,
 *  the one declaration that overlap-compile's flags, the pipeline
 *  overlap-to-llvm and Python share. */
#define OVERLAP_COMPILE_OPTION_C_STRING const char *
#define OVERLAP_COMPILE_OPTION_C_BOOL bool
typedef struct {
  /* sizeof(OverlapCompileOptions), as overlapCompileOptionsDefault() sets
   * it: options laid out by another version of this header are refused
   * (overlapCompile fails saying so), never misread. */
  size_t size;
#define OVERLAP_COMPILE_OPTION(FIELD, FLAG, KIND, DEFAULT, HELP)               \
  OVERLAP_COMPILE_OPTION_C_##KIND FIELD;
#include "overlap/Compiler/CompileOptions.def"
  const char *entry; /* "": the only public function with a body */
  const char *cpu;   /* "": generic; "native" */
  OverlapEmit emit;
  unsigned optLevel; /* 0 to 3 */
  /* The source's name in diagnostics (the file it was read from); "input"
   * by default. */
  const char *sourceName;
} OverlapCompileOptions;

MLIR_CAPI_EXPORTED OverlapCompileOptions overlapCompileOptionsDefault(void);

/** The layout of OverlapCompileOptions as this library was built with it, a
 *  JSON array of {"field", "flag", "kind" (size, string, bool, emit,
 *  unsigned), "offset"} in field order, and its "size": what a binding that
 *  mirrors the struct (Python's ctypes) builds its mirror from. Static
 *  storage; never null. */
MLIR_CAPI_EXPORTED const char *overlapCompileOptionsLayout(void);

/** Sets the pipeline option named `flag` (as overlap-compile spells it:
 *  "strategy", "gpu-chip", "testing-drop-waits") from its text; the string
 *  is copied into storage that lives as long as the process. Returns NULL,
 *  or a message naming the option (with the closest name when there is no
 *  such option), which the caller frees with free(). */
MLIR_CAPI_EXPORTED char *overlapCompileOptionsSet(OverlapCompileOptions *o,
                                                  const char *flag,
                                                  const char *value);

typedef struct OverlapCompileResult OverlapCompileResult;

/** Compiles the MLIR text `source` and writes the output to `outputPath`.
 *  Never returns null; destroy the result with overlapCompileResultDestroy. */
MLIR_CAPI_EXPORTED OverlapCompileResult *
overlapCompile(MlirStringRef source, MlirStringRef outputPath,
               const OverlapCompileOptions *options);

/** Whether the compilation succeeded. */
MLIR_CAPI_EXPORTED bool
overlapCompileResultSucceeded(const OverlapCompileResult *result);

/** On failure: what went wrong (stage, diagnostics with locations). Every
 *  accessor takes NULL: an empty text, "[]" for the plans and the missed
 *  remarks, false. */
MLIR_CAPI_EXPORTED MlirStringRef
overlapCompileResultError(const OverlapCompileResult *result);

/** On success: the plans chosen, in the order of the ops, a JSON array with
 *  one object per fused op: the Planner's document of its plan, as
 *  overlapPlanJSON returns it ("strategy", "tiles" an array of integers,
 *  "bound", "predicted_us", "serial_us" and the other times as numbers,
 *  "problem", "profile", "tasks", ...), plus "location" (file:line:col),
 *  "op" (the fused op's name) and "summary" (the plan remark's text). */
MLIR_CAPI_EXPORTED MlirStringRef
overlapCompileResultPlansJSON(const OverlapCompileResult *result);

/** On success: why ops were not overlapped, a JSON array with one object
 *  per missed remark of Overlap's passes: "location" (file:line:col),
 *  "pass" (overlap-raise, overlap-lower-collectives, ...), "name"
 *  (not-raised, not-overlapped, ...) and "reason" (the remark's text); the
 *  same remarks overlap-compile prints with --remarks-filter=overlap. */
MLIR_CAPI_EXPORTED MlirStringRef
overlapCompileResultMissedJSON(const OverlapCompileResult *result);

/** On success: what the caller should be told, one warning a line ending in
 *  '\n' (e.g. "no overlap_entry_signature embedded (overlap-exec cannot
 *  run the output): ..."); empty when there is none. overlap-compile prints
 *  the same lines as "warning:"s. */
MLIR_CAPI_EXPORTED MlirStringRef
overlapCompileResultWarnings(const OverlapCompileResult *result);

MLIR_CAPI_EXPORTED void overlapCompileResultDestroy(OverlapCompileResult *r);

/** Runs the registered pipeline `overlap-to-llvm{options}` (options as in
 *  the pipeline's text form, e.g. "target=host strategy=uniform:2") on
 *  `module` in place; diagnostics go to the context's handlers. */
MLIR_CAPI_EXPORTED MlirLogicalResult
mlirOverlapRunPipeline(MlirModule module, MlirStringRef options);

#ifdef __cplusplus
}
#endif

#endif /* OVERLAP_C_COMPILER_H */

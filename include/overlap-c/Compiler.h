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
#include "overlap-c/Export.h"

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

OVERLAP_C_API OverlapCompileOptions overlapCompileOptionsDefault(void);

/** The layout of OverlapCompileOptions as this library was built with it, a
 *  JSON array of {"field", "flag", "kind" (size, string, bool, emit,
 *  unsigned), "offset"} in field order, and its "size": what a binding that
 *  mirrors the struct (Python's ctypes) builds its mirror from. Static
 *  storage; never NULL. */
OVERLAP_C_API const char *overlapCompileOptionsLayout(void);

/** Sets the pipeline option named `flag` (as overlap-compile spells it:
 *  "strategy", "gpu-chip", "testing-drop-waits") from its text; the string
 *  is copied into storage that lives as long as the process. Returns 0, or
 *  2 with a message naming the option (with the closest name when there is
 *  no such option) in `*messages` (overlap-c/Export.h's convention). */
OVERLAP_C_API int overlapCompileOptionsSet(OverlapCompileOptions *o,
                                           const char *flag, const char *value,
                                           char **messages);

/** What a compilation chose and said: NULL-safe accessors, destroyed with
 *  overlapCompileResultDestroy. */
typedef struct OverlapCompileResult OverlapCompileResult;

/** Compiles the MLIR text (or bytecode) `source` of `length` bytes and
 *  writes the output to `outputPath`. Returns 0 with what it chose in
 *  `*result`; 1 when the compilation failed, 2 when the options are bad,
 *  with what went wrong (stage, diagnostics with locations) in
 *  `*messages` (overlap-c/Export.h's convention: free with overlapFree;
 *  `result` and `messages` may be NULL; `*result` is NULL on failure). */
OVERLAP_C_API int overlapCompile(const char *source, size_t length,
                                 const char *outputPath,
                                 const OverlapCompileOptions *options,
                                 OverlapCompileResult **result,
                                 char **messages);

/** The plans chosen, in the order of the ops, a JSON array with one object
 *  per fused op: the Planner's document of its plan, as overlapPlanJSON
 *  returns it ("strategy", "tiles" an array of integers, "bound",
 *  "predicted_us", "serial_us" and the other times as numbers, "problem",
 *  "profile", "tasks", ...), plus "location" (file:line:col), "op" (the
 *  fused op's name) and "summary" (the plan remark's text). "[]" for a
 *  NULL result. */
OVERLAP_C_API const char *
overlapCompileResultPlansJSON(const OverlapCompileResult *result);

/** Why ops were not overlapped, a JSON array with one object per missed
 *  remark of Overlap's passes: "location" (file:line:col), "pass"
 *  (overlap-raise, overlap-lower-collectives, ...), "name" (not-raised,
 *  not-overlapped, ...) and "reason" (the remark's text); the same remarks
 *  overlap-compile prints with --remarks-filter=overlap. "[]" for a NULL
 *  result. */
OVERLAP_C_API const char *
overlapCompileResultMissedJSON(const OverlapCompileResult *result);

/** What the caller should be told, one warning a line ending in '\n' (e.g.
 *  "no overlap_entry_signature embedded (overlap-exec cannot run the
 *  output): ..."); "" when there is none or for a NULL result.
 *  overlap-compile prints the same lines as "warning:"s. */
OVERLAP_C_API const char *
overlapCompileResultWarnings(const OverlapCompileResult *result);

OVERLAP_C_API void overlapCompileResultDestroy(OverlapCompileResult *result);

/** Runs the registered pipeline `overlap-to-llvm{options}` (options as in
 *  the pipeline's text form, e.g. "target=host strategy=uniform:2") on
 *  `module` in place; diagnostics go to the context's handlers. */
MLIR_CAPI_EXPORTED MlirLogicalResult
mlirOverlapRunPipeline(MlirModule module, MlirStringRef options);

#ifdef __cplusplus
}
#endif

#endif /* OVERLAP_C_COMPILER_H */

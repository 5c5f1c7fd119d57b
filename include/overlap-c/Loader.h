/*===- overlap-c/Loader.h - Run compiled programs from C ----------*- C -*-===*\
|*                                                                            *|
|* Runs a shared library from overlap-compile (or overlapCompile) as          *|
|* overlap-exec does: seeded inputs on host ranks (threads) or one CUDA       *|
|* device, against a reference library when one is given. No MLIR.           *|
\*===----------------------------------------------------------------------===*/

#ifndef OVERLAP_C_LOADER_H
#define OVERLAP_C_LOADER_H

#include <stdint.h>

#include "overlap-c/Export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char *program;   /* the library to run */
  const char *reference; /* NULL or "": no reference (checksums) */
  const char *backend;   /* NULL: the program's target; "host" or "cuda" */
  int ranks;             /* 0: the size of the program's grid */
  uint64_t seed;
  int iterations;
  double rtol, atol;
  int64_t waitTimeoutMs; /* 0: the runtime's default */
} OverlapRunOptions;

/** The defaults of overlap-exec (seed 1, one iteration, exact). */
OVERLAP_C_API OverlapRunOptions overlapRunOptionsDefault(void);

/** Runs as overlap-exec; returns its exit status (0 match, 1 mismatch, 2
 *  error, 3 no CUDA device) with its report in `*report` and its messages
 *  in `*messages` (free both with overlapFree from overlap-c/Planner.h). */
OVERLAP_C_API int overlapRun(const OverlapRunOptions *options, char **report,
               char **messages);

#ifdef __cplusplus
}
#endif

#endif /* OVERLAP_C_LOADER_H */

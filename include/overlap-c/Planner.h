/*===- overlap-c/Planner.h - The Planner from C, without MLIR -----*- C -*-===*\
|*                                                                            *|
|* Plans in process (libOverlapHostCAPI.so, no MLIR; LLVM's Support through   *|
|* the Planner): a JSON request in, the document of `overlap-plan --json` out.*|
\*===----------------------------------------------------------------------===*/

#ifndef OVERLAP_C_PLANNER_H
#define OVERLAP_C_PLANNER_H

#include "overlap-c/Export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Plans `request`: {"kind": "matmul", "collective": "all-reduce", "m": M,
 *  "n": N, "k": K, "ranks": R, "dtype": "f16", "profile": NAME_OR_PATH,
 *  "strategy": "auto"} or {"kind": "chain", "dims": [...], "fast_memory":
 *  Mf}. Returns 0 and the JSON document in `*result`; 2 for a bad request,
 *  1 when planning fails, with the message in `*messages`. Free both with
 *  overlapFree. */
OVERLAP_C_API int overlapPlanJSON(const char *request, char **result,
                                  char **messages);

#ifdef __cplusplus
}
#endif

#endif /* OVERLAP_C_PLANNER_H */

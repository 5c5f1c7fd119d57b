/*===- overlap-c/Export.h - Overlap's C convention, once ----------*- C -*-===*\
|*                                                                            *|
|* The one convention of Overlap's C functions, in both libraries             *|
|* (libOverlapHostCAPI.so: Planner.h, Loader.h; libOverlapCAPI.so:            *|
|* Compiler.h):                                                               *|
|*                                                                            *|
|* - OVERLAP_C_API marks them (the libraries are built with hidden            *|
|*   visibility).                                                             *|
|* - A call that can fail returns an int status: 0 done; 1 the work itself    *|
|*   failed (a mismatch against the reference, a compile error, a            *|
|*   profile that cannot price the problem); 2 bad input (options, values,    *|
|*   files), said before anything runs; 3 no CUDA device or backend here.     *|
|*   Why is in `*messages`, text the caller frees with overlapFree (NULL on   *|
|*   0 where there is nothing to say).                                        *|
|* - What a call makes is returned through an out-parameter: text freed       *|
|*   with overlapFree, or an opaque object with NULL-safe accessors (NULL,    *|
|*   0 or empty on a NULL object or an index out of range) and a Destroy.     *|
|*   Every out-parameter may be NULL.                                         *|
|* - Options are sized structs (their first field `size`) made by a           *|
|*   ...Default() function, with a ...Layout() JSON of their fields for       *|
|*   bindings that mirror them.                                               *|
|*                                                                            *|
|* The mlir* functions of libOverlapCAPI.so (dialect and pass registration,   *|
|* mlirOverlapRunPipeline) take MLIR handles and follow MLIR's C API          *|
|* instead (MLIR_CAPI_EXPORTED, MlirLogicalResult).                           *|
\*===----------------------------------------------------------------------===*/

#ifndef OVERLAP_C_EXPORT_H
#define OVERLAP_C_EXPORT_H

#ifndef OVERLAP_C_API
#define OVERLAP_C_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Frees text an Overlap C function returned (NULL is fine). Both
 *  libraries define it (the same free()), so either can free what the
 *  other returned. */
OVERLAP_C_API void overlapFree(void *pointer);

#ifdef __cplusplus
}
#endif

#endif /* OVERLAP_C_EXPORT_H */

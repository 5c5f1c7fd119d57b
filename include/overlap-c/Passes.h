/*===- overlap-c/Passes.h - Overlap's passes from C ---------------*- C -*-===*\
|*                                                                            *|
|* Registers Overlap's passes and pipelines (overlap-pipeline,                *|
|* overlap-to-llvm) and the upstream passes they use, so that                 *|
|* mlirParsePassPipeline (mlir-c/Pass.h) finds them.                          *|
\*===----------------------------------------------------------------------===*/

#ifndef OVERLAP_C_PASSES_H
#define OVERLAP_C_PASSES_H

#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The passes of overlap/InitAllPasses.h; safe to call more than once. */
MLIR_CAPI_EXPORTED void mlirRegisterOverlapPasses(void);

#ifdef __cplusplus
}
#endif

#endif /* OVERLAP_C_PASSES_H */

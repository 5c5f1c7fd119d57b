/*===- overlap-c/Dialects.h - Overlap's dialects from C -----------*- C -*-===*\
|*                                                                            *|
|* The Overlap dialect's handle (mlirGetDialectHandle__overlap__) and every   *|
|* dialect, interface model and LLVM IR translation Overlap's pipelines use   *|
|* (the set of overlap/InitAllDialects.h), so that a C client parses          *|
|* upstream shard/linalg input and runs the pipelines. With MLIR's own C API  *|
|* (mlir-c/IR.h), which libOverlapCAPI.so carries.                            *|
\*===----------------------------------------------------------------------===*/

#ifndef OVERLAP_C_DIALECTS_H
#define OVERLAP_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Overlap, overlap);

/** Inserts the dialects, interface models and LLVM IR translations of
 *  overlap/InitAllDialects.h into `registry`. */
MLIR_CAPI_EXPORTED void
mlirOverlapRegisterAllDialects(MlirDialectRegistry registry);

#ifdef __cplusplus
}
#endif

#endif /* OVERLAP_C_DIALECTS_H */

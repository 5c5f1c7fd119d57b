/*===- overlap-c/Export.h - Visibility of Overlap's C functions ---*- C -*-===*\
|*                                                                            *|
|* OVERLAP_C_API marks the functions of the MLIR-free C API                   *|
|* (libOverlapHostCAPI.so, built with hidden visibility).                     *|
\*===----------------------------------------------------------------------===*/

#ifndef OVERLAP_C_EXPORT_H
#define OVERLAP_C_EXPORT_H

#ifndef OVERLAP_C_API
#define OVERLAP_C_API __attribute__((visibility("default")))
#endif

#endif /* OVERLAP_C_EXPORT_H */

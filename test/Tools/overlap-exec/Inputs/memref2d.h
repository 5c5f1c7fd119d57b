/* The 2-D memref descriptor of MLIR's C interface, as the hand-written
   stand-ins here for libraries from overlap-compile --emit=so take and
   return it. */
#ifndef OVERLAP_TEST_INPUTS_MEMREF2D_H
#define OVERLAP_TEST_INPUTS_MEMREF2D_H

#include <stdint.h>

typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} Memref2D;

/* Makes `result` the row-major 4x8 buffer at `aligned`, whose allocation
   starts at `allocated`. */
static inline void memref2d_set_4x8(Memref2D *result, float *allocated,
                                    float *aligned) {
  result->allocated = allocated;
  result->aligned = aligned;
  result->offset = 0;
  result->sizes[0] = 4;
  result->sizes[1] = 8;
  result->strides[0] = 8;
  result->strides[1] = 1;
}

#endif

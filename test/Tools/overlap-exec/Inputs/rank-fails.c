/* A hand-written stand-in for a library from overlap-compile --emit=so whose
   rank 2 fails: @fail4(arg0: 4x8xf32) -> 4x8xf32 on a grid of 4. Every
   other rank all-reduces arg0 into its result and waits for it; rank 2 makes
   a GEMM call with a bad leading dimension (lda 1 < k 4), which the runtime
   refuses at the call, so the others' all-reduce can only end because they
   hear of rank 2's failure (or at their wait timeout). */
#include "memref2d.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <stdint.h>
#include <stdlib.h>

const char overlap_entry_signature[] = "overlap-entry-signature 1\n"
                                       "entry fail4\n"
                                       "symbol _mlir_ciface_fail4\n"
                                       "target host\n"
                                       "strategy hand-written\n"
                                       "grid g 4\n"
                                       "arg arg0 4x8xf32\n"
                                       "result result0 4x8xf32\n";

void _mlir_ciface_fail4(Memref2D *result, overlap_context *ctx,
                        Memref2D *arg0) {
  enum { N = 32 };
  float *in = arg0->aligned + arg0->offset;
  float *out = malloc(N * sizeof(float));
  if (overlap_context_rank(ctx) == 2)
    overlap_gemm(ctx, OVERLAP_STREAM_COMPUTE, 3, 1, 2, 2, 4, OVERLAP_F32, in, 1,
                 0, in, 2, 0, OVERLAP_F32, out, 2, 0, 0);
  else
    overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, 0, NULL, OVERLAP_F32,
                       OVERLAP_SUM, in, out, N);
  overlap_context_synchronize(ctx);
  memref2d_set_4x8(result, out, out);
}

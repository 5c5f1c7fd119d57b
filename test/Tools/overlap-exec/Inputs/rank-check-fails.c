/* A hand-written stand-in for a library from overlap-compile --emit=so whose
   rank 2 fails a run-time check (what a compiled cf.assert calls): @check4
   (arg0: 4x8xf32) -> 4x8xf32 on a grid of 4. Every other rank all-reduces
   arg0 and waits; rank 2's failed check must fail that rank with its
   message, not end its process with SIGABRT, and the others must hear of
   it (issue 48, item 8). */
#include "memref2d.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char overlap_entry_signature[] = "overlap-entry-signature 1\n"
                                       "entry check4\n"
                                       "symbol _mlir_ciface_check4\n"
                                       "target host\n"
                                       "strategy hand-written\n"
                                       "grid g 4\n"
                                       "arg arg0 4x8xf32\n"
                                       "result result0 4x8xf32\n";

void _mlir_ciface_check4(Memref2D *result, overlap_context *ctx,
                         Memref2D *arg0) {
  enum { N = 32 };
  static const char message[] =
      "overlap: run-time check failed: rank 2's stand-in check\n";
  float *in = arg0->aligned + arg0->offset;
  float *out = malloc(N * sizeof(float));
  if (overlap_context_rank(ctx) == 2)
    overlap_check_failed(message, (int64_t)strlen(message));
  overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, 0, NULL, OVERLAP_F32,
                     OVERLAP_SUM, in, out, N);
  overlap_context_synchronize(ctx);
  memref2d_set_4x8(result, out, out);
}

/* A hand-written stand-in for a library from overlap-compile --emit=so whose
   rank 2 stops (SIGSTOP, as a debugger or a job scheduler's suspend would)
   once its work is done, before its launch ends: @stop4(arg0: 4x8xf32) ->
   4x8xf32 on a grid of 4, every rank all-reducing arg0 into its result. The
   other ranks finish and wait for rank 2 at the end of the launch (the
   drain and the agreement on the exit status), which must end, not hang
   (issue 48). */
#include "memref2d.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>

const char overlap_entry_signature[] = "overlap-entry-signature 1\n"
                                       "entry stop4\n"
                                       "symbol _mlir_ciface_stop4\n"
                                       "target host\n"
                                       "strategy hand-written\n"
                                       "grid g 4\n"
                                       "arg arg0 4x8xf32\n"
                                       "result result0 4x8xf32\n";

void _mlir_ciface_stop4(Memref2D *result, overlap_context *ctx,
                        Memref2D *arg0) {
  enum { N = 32 };
  float *in = arg0->aligned + arg0->offset;
  float *out = malloc(N * sizeof(float));
  overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, 0, NULL, OVERLAP_F32,
                     OVERLAP_SUM, in, out, N);
  overlap_context_synchronize(ctx);
  memref2d_set_4x8(result, out, out);
  if (overlap_context_rank(ctx) == 2)
    raise(SIGSTOP);
}

/* A hand-written stand-in for a plan and its one-tile reference, compiled
   twice: -DFLAGS=4 (the plan) and -DFLAGS=1 (the reference). @sets(arg0:
   4x8xf32) -> 4x8xf32 on a grid of 2 acquires the signal set of key 0 with
   FLAGS flags, as every compiled program's first overlap.concurrent
   region does, raises and waits for each flag, and all-reduces its input.
   Run as plan and reference on one context (overlap-exec --ref on one
   backend), the two ask for key 0 with 4 and then 1 flags: the runtime
   keeps one set per (key, flag count); a runtime that kept one per key
   would refuse the second ("key 0 has 4 flags, asked for 1"), the failure
   half of the GPU program checks would have hit. */
#include "memref2d.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <stdint.h>
#include <stdlib.h>

#ifndef FLAGS
#define FLAGS 4
#endif

const char overlap_entry_signature[] = "overlap-entry-signature 1\n"
                                       "entry sets\n"
                                       "symbol _mlir_ciface_sets\n"
                                       "target host\n"
                                       "strategy hand-written\n"
                                       "grid g 2\n"
                                       "arg arg0 4x8xf32\n"
                                       "result result0 4x8xf32\n";

void _mlir_ciface_sets(Memref2D *result, overlap_context *ctx, Memref2D *arg0) {
  enum { N = 32 };
  float *in = arg0->aligned + arg0->offset;
  float *out = malloc(N * sizeof(float));
  overlap_signals *sigs = NULL;
  if (overlap_signals_acquire(ctx, 0, FLAGS, &sigs) == OVERLAP_SUCCESS)
    for (int32_t f = 0; f < FLAGS; ++f) {
      overlap_signal(ctx, OVERLAP_STREAM_COMPUTE, sigs, f);
      overlap_wait(ctx, OVERLAP_STREAM_COMM, sigs, f);
    }
  overlap_all_reduce(ctx, OVERLAP_STREAM_COMM, 0, NULL, OVERLAP_F32,
                     OVERLAP_SUM, in, out, N);
  overlap_context_synchronize(ctx);
  memref2d_set_4x8(result, out, out);
}

/* A hand-written stand-in for a library from overlap-compile --emit=so, for
   overlap-exec's tests: an embedded signature and the C interface of
   @add1(arg0: 4x8xf32) -> 4x8xf32 on a grid of 2, whose result is a new
   buffer holding arg0 + 1.
     -DTARGET_CUDA      the signature says target cuda
     -DGRID1            on a grid of 1 instead of 2
     -DPARTIAL          only the first half of the result is written; the
                        rest is whatever malloc returned, which overlap-exec
                        poisons (NaN)
     -DNO_RESULT        the result descriptor is left as it was
     -DNO_SIGNATURE     no overlap_entry_signature at all
     -DBAD_SIGNATURE    a signature with an unsupported element type
     -DIN_PLACE         the result is arg0's buffer, updated in place (as
                        bufferization may do with a tensor argument)
     -DINOUT            the signature says arg0 is inout (a memref the
                        entry writes), so its contents are an output
     -DREPORT_POISON    each call appends "poisoned" or "clean" to the file
                        $FAKE_POISON_LOG: whether the buffer it malloc'd
                        came filled with all-ones bytes */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TARGET_CUDA
#define TARGET "cuda"
#else
#define TARGET "host"
#endif
#ifdef GRID1
#define GRID "1"
#else
#define GRID "2"
#endif

#ifdef INOUT
#define ARG0 "arg arg0 4x8xf32 inout\n"
#else
#define ARG0 "arg arg0 4x8xf32\n"
#endif

#if defined(BAD_SIGNATURE)
const char overlap_entry_signature[] = "overlap-entry-signature 1\n"
                                       "entry add1\n"
                                       "symbol _mlir_ciface_add1\n"
                                       "target host\n"
                                       "arg arg0 4x8xf64\n";
#elif !defined(NO_SIGNATURE)
const char overlap_entry_signature[] = "overlap-entry-signature 1\n"
                                       "entry add1\n"
                                       "symbol _mlir_ciface_add1\n"
                                       "target " TARGET "\n"
                                       "strategy hand-written\n"
                                       "grid g " GRID "\n"
                                       ARG0
                                       "result result0 4x8xf32\n";
#endif

typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} Memref2D;

void _mlir_ciface_add1(Memref2D *result, void *ctx, Memref2D *arg0) {
  enum { N = 32 };
  (void)ctx;
#ifdef NO_RESULT
  (void)result;
  (void)arg0;
#else
#ifdef IN_PLACE
  float *out = arg0->aligned + arg0->offset;
#else
  float *out = malloc(N * sizeof(float));
#endif
#if defined(REPORT_POISON) && !defined(IN_PLACE)
  {
    uint32_t last;
    memcpy(&last, &out[N - 1], sizeof(last));
    FILE *log = fopen(getenv("FAKE_POISON_LOG"), "a");
    if (log) {
      fputs(last == 0xffffffffu ? "poisoned\n" : "clean\n", log);
      fclose(log);
    }
  }
#endif
#ifdef PARTIAL
  int written = N / 2;
#else
  int written = N;
#endif
  for (int i = 0; i < written; ++i)
    out[i] = arg0->aligned[arg0->offset + i] + 1.0f;
#ifdef IN_PLACE
  result->allocated = arg0->allocated;
  result->aligned = out;
#else
  result->allocated = result->aligned = out;
#endif
  result->offset = 0;
  result->sizes[0] = 4;
  result->sizes[1] = 8;
  result->strides[0] = 8;
  result->strides[1] = 1;
#endif
}

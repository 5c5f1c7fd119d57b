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
                        came filled with all-ones bytes
   Signatures that do not match the code (the loader must refuse them):
     -DHUGE_ARG         arg0 is 1024x1024x1024x1024xf32, 4 TiB
     -DWRAP_ARG         arg0 has 2^68 elements: the count wraps past 2^64
     -DDATA_ENTRY       the symbol it names is a data object
     -DIMPORTED_ENTRY   the symbol it names is malloc, which the library
                        imports
     -DRANK1_RESULT     result0 is 32xf32 (rank 1), while the code writes a
                        rank-2 descriptor: two words past the declared ones
   Result descriptors the loader must refuse:
     -DNEG_STRIDE       stride -8 in dimension 0
     -DHUGE_STRIDE      strides whose last element overflows int64_t
     -DNULL_ALLOCATED   no allocated pointer (the aligned one is set)
     -DOUTSIDE_ARG      in place, but offset 32: past the end of arg0
     -DHUGE_DYNAMIC     result0 is ?x8xf32 and its descriptor says 2^44
                        rows of stride 0 (one row, repeated): a copy of it
                        is 512 TiB, more than a 47-bit address space:
                        the loader cannot allocate it */
#include "memref2d.h"

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

#if defined(HUGE_ARG)
#define ARG0 "arg arg0 1024x1024x1024x1024xf32\n"
#elif defined(WRAP_ARG)
#define ARG0 "arg arg0 4294967296x4294967296x16xf32\n"
#elif defined(INOUT)
#define ARG0 "arg arg0 4x8xf32 inout\n"
#else
#define ARG0 "arg arg0 4x8xf32\n"
#endif
#if defined(DATA_ENTRY)
#define SYMBOL "overlap_fake_table"
#elif defined(IMPORTED_ENTRY)
#define SYMBOL "malloc"
#else
#define SYMBOL "_mlir_ciface_add1"
#endif
#ifdef RANK1_RESULT
#define RESULT0 "result result0 32xf32\n"
#elif defined(HUGE_DYNAMIC)
#define RESULT0 "result result0 ?x8xf32\n"
#else
#define RESULT0 "result result0 4x8xf32\n"
#endif
#if defined(OUTSIDE_ARG) && !defined(IN_PLACE)
#define IN_PLACE
#endif

/* A data object for DATA_ENTRY to name. */
int64_t overlap_fake_table[64] = {1};

#if defined(BAD_SIGNATURE)
const char overlap_entry_signature[] = "overlap-entry-signature 1\n"
                                       "entry add1\n"
                                       "symbol _mlir_ciface_add1\n"
                                       "target host\n"
                                       "arg arg0 4x8xc64\n";
#elif !defined(NO_SIGNATURE)
const char overlap_entry_signature[] = "overlap-entry-signature 1\n"
                                       "entry add1\n"
                                       "symbol " SYMBOL "\n"
                                       "target " TARGET "\n"
                                       "strategy hand-written\n"
                                       "grid g " GRID "\n" ARG0 RESULT0;
#endif

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
  memref2d_set_4x8(result, arg0->allocated, out);
#else
  memref2d_set_4x8(result, out, out);
#endif
#ifdef NEG_STRIDE
  result->strides[0] = -8;
#endif
#ifdef HUGE_STRIDE
  result->strides[0] = INT64_MAX / 2;
#endif
#ifdef NULL_ALLOCATED
  result->allocated = NULL;
#endif
#ifdef OUTSIDE_ARG
  result->offset = 32;
#endif
#ifdef HUGE_DYNAMIC
  result->sizes[0] = (int64_t)1 << 44;
  result->strides[0] = 0;
#endif
#endif
}

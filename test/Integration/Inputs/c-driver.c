/* A C host for a shared library from `overlap-compile --emit=so`: dlopen it,
   find the runtime through the library's own dependency, and run
   @mar(ctx, A, B, C) -> D (matmul + all-reduce, 256x64 . 64x32 on 2 ranks)
   through its C interface. Every element of D must be the sum over ranks of
   C + A.B, computed here in the same order (k ascending, f32, then ranks in
   order), so the comparison is exact. Prints "c-driver: OK" or the first
   wrong element. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overlap/Runtime/overlap_runtime.h"

enum { M = 256, K = 64, N = 32, R = 2 };

typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} Memref2D;

typedef void (*Entry)(Memref2D *result, overlap_context *ctx, Memref2D *a,
                      Memref2D *b, Memref2D *c);
typedef overlap_status (*Launch)(int, const overlap_host_options *,
                                 void (*)(overlap_context *, void *), void *);
typedef void (*OptionsInit)(overlap_host_options *);
typedef int (*RankOf)(overlap_context *);

static Entry entry;
static RankOf rankOf;
static float a[R][M * K], b[R][K * N], c[R][M * N], d[R][M * N];

static float value(int rank, int which, int i) {
  return (float)(((rank * 7 + which * 3 + i * 13) % 17) - 8) / 8.0f;
}

static Memref2D view(float *data, int64_t rows, int64_t cols) {
  Memref2D m = {data, data, 0, {rows, cols}, {cols, 1}};
  return m;
}

static void rankMain(overlap_context *ctx, void *user) {
  int r = rankOf(ctx);
  Memref2D ma = view(a[r], M, K), mb = view(b[r], K, N), mc = view(c[r], M, N);
  Memref2D result;
  memset(&result, 0xff, sizeof result);
  entry(&result, ctx, &ma, &mb, &mc);
  memcpy(d[r], result.aligned + result.offset, sizeof d[r]);
  (void)user;
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  void *lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) {
    printf("c-driver: %s\n", dlerror());
    return 2;
  }
  entry = (Entry)dlsym(lib, "_mlir_ciface_mar");
  Launch launch = (Launch)dlsym(lib, "overlap_host_launch");
  OptionsInit init = (OptionsInit)dlsym(lib, "overlap_host_options_init");
  rankOf = (RankOf)dlsym(lib, "overlap_context_rank");
  if (!entry || !launch || !init || !rankOf) {
    printf("c-driver: missing symbol\n");
    return 2;
  }
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < M * K; ++i) a[r][i] = value(r, 0, i);
    for (int i = 0; i < K * N; ++i) b[r][i] = value(r, 1, i);
    for (int i = 0; i < M * N; ++i) c[r][i] = value(r, 2, i);
  }
  overlap_host_options opts;
  init(&opts);
  opts.chaos = OVERLAP_CHAOS_OFF;
  if (launch(R, &opts, rankMain, NULL) != OVERLAP_SUCCESS) {
    printf("c-driver: launch failed\n");
    return 2;
  }
  /* C was updated in place (C + A.B, reduced); recompute from scratch. */
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float total = 0;
      for (int r = 0; r < R; ++r) {
        volatile float acc = value(r, 2, i * N + j);
        for (int k = 0; k < K; ++k) {
          volatile float p = a[r][i * K + k] * b[r][k * N + j];
          acc = acc + p;
        }
        total = r == 0 ? acc : total + acc;
      }
      for (int r = 0; r < R; ++r)
        if (memcmp(&d[r][i * N + j], &total, sizeof total) != 0) {
          printf("c-driver: rank %d D[%d][%d] = %g, expected %g\n", r, i, j,
                 d[r][i * N + j], total);
          return 1;
        }
    }
  printf("c-driver: OK\n");
  return 0;
}

/* Host ranks as processes against host ranks as threads, through the
   runtime's C ABI. Run under `mpirun -np R`: each process runs its rank
   with overlap_process_launch (collectives over MPI), then all R ranks as
   threads with overlap_host_launch, and compares its own rank's results of
   the two bit for bit.

     process-collectives compare   every collective, dtype and reduction;
                                   counts below and above R; in place; the
                                   world, the rows and columns of a 2 x R/2
                                   grid and a group with reversed keys; two
                                   groups and two calls of one group in
                                   flight on different streams at once.
                                   overlap_shift by 0, 1, G-1, -1 and G+1
                                   (count 0 too; in place for 0).
     process-collectives mismatch  rank 1 issues another count: every rank
                                   fails with the same text.
     process-collectives shift-mismatch
                                   rank 1 shifts by 2, the others by 1:
                                   every rank fails with the same text.
     process-collectives missing   rank 1 skips a collective: the others
                                   time out naming it.
     process-collectives fail      rank 2 fails at once (a bad GEMM
                                   argument) while the others wait in an
                                   all-reduce with a 60 s timeout: they must
                                   be released long before that.

   Each process prints one line; the exit status is 0 when its line says
   what the mode expects. */
#include "overlap/Runtime/overlap_runtime_process.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kMaxRanks = 8, kMaxCases = 1280, kMaxBytes = 4096 };

typedef struct {
  int kind; /* 0 all-reduce, 1 reduce-scatter, 2 all-gather, 3 all-to-all,
               4 shift */
  overlap_dtype dtype;
  overlap_reduce_op op;
  int64_t count;
  int inPlace;
  int group; /* 0 world, 1 rows, 2 columns, 3 reversed */
  int shift; /* kind 4: 0, 1, G-1, -1, G+1 for 0, 1, 2, 3, 4 */
} Case;

static Case cases[kMaxCases];
static int numCases;
/* [rank][case]: the destination after the call. */
typedef unsigned char Results[kMaxRanks][kMaxCases][kMaxBytes];
static Results *byProcess, *byThreads;
static const char *mode;

static size_t elemBytes(overlap_dtype dtype) {
  return dtype == OVERLAP_F32 ? 4 : 2;
}

/* splitmix64: the same values on every run and process. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static void fill(void *buffer, overlap_dtype dtype, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; ++i) {
    float v =
        (float)(mix(seed * 1000003u + (uint64_t)i) >> 40) / (float)(1 << 22) -
        2.0f;
    if (dtype == OVERLAP_F32)
      ((float *)buffer)[i] = v;
    else if (dtype == OVERLAP_F16)
      ((uint16_t *)buffer)[i] = overlap_f32_to_f16(v);
    else
      ((uint16_t *)buffer)[i] = overlap_f32_to_bf16(v);
  }
}

static void makeCases(int ranks) {
  const overlap_dtype dtypes[] = {OVERLAP_F32, OVERLAP_F16, OVERLAP_BF16};
  const overlap_reduce_op ops[] = {OVERLAP_SUM, OVERLAP_PROD, OVERLAP_MAX,
                                   OVERLAP_MIN, OVERLAP_AVG};
  const int64_t counts[] = {1, 3, 37};
  int groups = ranks % 2 == 0 && ranks > 2 ? 4 : 1;
  for (int kind = 0; kind < 4; ++kind)
    for (int d = 0; d < 3; ++d)
      for (int o = 0; o < (kind < 2 ? 5 : 1); ++o)
        for (int c = 0; c < 3; ++c)
          for (int inPlace = 0; inPlace < (kind < 3 ? 2 : 1); ++inPlace)
            for (int g = 0; g < groups; ++g) {
              Case k = {kind, dtypes[d], ops[o], counts[c], inPlace, g, 0};
              cases[numCases++] = k;
            }
  /* Shifts: count 0 instead of 1 (no rank count matters to a shift). */
  for (int d = 0; d < 3; ++d)
    for (int shift = 0; shift < 5; ++shift)
      for (int c = 0; c < 3; ++c)
        for (int inPlace = 0; inPlace < (shift == 0 ? 2 : 1); ++inPlace)
          for (int g = 0; g < groups; ++g) {
            Case k = {4, dtypes[d], OVERLAP_SUM, c == 0 ? 0 : counts[c],
                      inPlace, g, shift};
            cases[numCases++] = k;
          }
}

static overlap_group *groupOf(overlap_group *const *groups, int index) {
  return index == 0 ? NULL : groups[index];
}

/* Runs case `index` on `stream` and copies the destination to `out`. */
static void runCase(overlap_context *ctx, overlap_group *const *groups,
                    int index, int stream, unsigned char *out) {
  const Case *k = &cases[index];
  int rank = overlap_context_rank(ctx);
  overlap_group *group = groupOf(groups, k->group);
  int g = group ? overlap_group_size(group) : overlap_context_size(ctx);
  int r = group ? overlap_group_rank(group) : rank;
  size_t e = elemBytes(k->dtype);
  static _Thread_local unsigned char src[kMaxBytes], dst[kMaxBytes];
  int64_t in = k->kind == 0 || k->kind == 2 || k->kind == 4
                   ? k->count
                   : g * k->count;
  int64_t outCount = k->kind == 0 || k->kind == 1 || k->kind == 4
                         ? k->count
                         : g * k->count;
  fill(src, k->dtype, in, (uint64_t)index * 64 + (uint64_t)rank);
  memset(dst, 0xff, sizeof dst);
  void *d = dst;
  const void *s = src;
  if (k->inPlace) {
    if (k->kind == 0 || k->kind == 4) {
      memcpy(dst, src, (size_t)in * e);
      s = dst;
    } else if (k->kind == 1) {
      memcpy(dst, src, (size_t)in * e);
      s = dst;
      d = dst + (size_t)r * (size_t)k->count * e;
    } else {
      memcpy(dst + (size_t)r * (size_t)k->count * e, src, (size_t)in * e);
      s = dst + (size_t)r * (size_t)k->count * e;
    }
  }
  switch (k->kind) {
  case 0:
    overlap_all_reduce(ctx, stream, index, group, k->dtype, k->op, s, d,
                       k->count);
    break;
  case 1:
    overlap_reduce_scatter(ctx, stream, index, group, k->dtype, k->op, s, d,
                           k->count);
    break;
  case 2:
    overlap_all_gather(ctx, stream, index, group, k->dtype, s, d, k->count);
    break;
  case 3:
    overlap_all_to_all(ctx, stream, index, group, k->dtype, s, d, k->count);
    break;
  default: {
    const int64_t shifts[] = {0, 1, g - 1, -1, g + 1};
    overlap_shift(ctx, stream, index, group, k->dtype, shifts[k->shift], s, d,
                  k->count);
    break;
  }
  }
  overlap_stream_synchronize(ctx, stream);
  memcpy(out, k->kind == 1 && k->inPlace ? d : dst, (size_t)outCount * e);
}

static void compareRank(overlap_context *ctx, void *user) {
  Results *results = (Results *)user;
  int rank = overlap_context_rank(ctx), size = overlap_context_size(ctx);
  overlap_group *groups[4] = {NULL, NULL, NULL, NULL};
  if (size % 2 == 0 && size > 2) {
    int half = size / 2;
    overlap_group_split(ctx, NULL, rank / half, rank % half, &groups[1]);
    overlap_group_split(ctx, NULL, rank % half, rank / half, &groups[2]);
    overlap_group_split(ctx, NULL, 0, size - rank, &groups[3]);
  }
  for (int i = 0; i < numCases; ++i)
    runCase(ctx, groups, i, OVERLAP_STREAM_COMM, (*results)[rank][i]);
  /* Two calls of the world and one of the rows in flight on three streams:
     matched by their order of issue on each group, not by timing. */
  static _Thread_local float a[64], b[64], c[64], da[64], db[64], dc[64];
  fill(a, OVERLAP_F32, 64, 7000 + rank);
  fill(b, OVERLAP_F32, 64, 8000 + rank);
  fill(c, OVERLAP_F32, 64, 9000 + rank);
  overlap_all_reduce(ctx, 2, 0, NULL, OVERLAP_F32, OVERLAP_SUM, a, da, 64);
  overlap_all_reduce(ctx, 1, 1, NULL, OVERLAP_F32, OVERLAP_MAX, b, db, 64);
  overlap_all_reduce(ctx, 0, 2, groups[1], OVERLAP_F32, OVERLAP_SUM, c, dc, 64);
  overlap_context_synchronize(ctx);
  memcpy((*results)[rank][numCases], da, sizeof da);
  memcpy((*results)[rank][numCases + 1], db, sizeof db);
  memcpy((*results)[rank][numCases + 2], dc, sizeof dc);
}

/* The failure modes: every rank but one makes the same calls. */
static void failRank(overlap_context *ctx, void *user) {
  (void)user;
  int rank = overlap_context_rank(ctx);
  static _Thread_local float x[8], y[8];
  fill(x, OVERLAP_F32, 8, (uint64_t)rank);
  if (!strcmp(mode, "mismatch")) {
    overlap_all_reduce(ctx, 1, 0, NULL, OVERLAP_F32, OVERLAP_SUM, x, y,
                       rank == 1 ? 4 : 8);
  } else if (!strcmp(mode, "shift-mismatch")) {
    overlap_shift(ctx, 1, 0, NULL, OVERLAP_F32, rank == 1 ? 2 : 1, x, y, 8);
  } else if (!strcmp(mode, "missing")) {
    if (rank != 1)
      overlap_all_gather(ctx, 1, 5, NULL, OVERLAP_F32, x, y, 2);
  } else if (rank == 2) {
    /* lda (1) < k (4): refused at the call. */
    overlap_gemm(ctx, 0, 3, 1, 2, 2, 4, OVERLAP_F32, x, 1, 0, x, 2, 0,
                 OVERLAP_F32, y, 2, 0, 0);
  } else {
    overlap_all_reduce(ctx, 1, 0, NULL, OVERLAP_F32, OVERLAP_SUM, x, y, 8);
  }
  overlap_context_synchronize(ctx);
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  mode = argc > 1 ? argv[1] : "compare";
  int rank = 0, size = 0;
  if (overlap_process_init(&rank, &size)) {
    printf("init failed: %s\n", overlap_host_launch_error());
    return 1;
  }
  if (!strcmp(mode, "gather-late") || !strcmp(mode, "max-late")) {
    /* Rank 1 comes 30 s late to a gather or max outside any launch: the
       others must end the job within OVERLAP_BOOTSTRAP_TIMEOUT_MS, naming
       it, not wait for it. */
    if (rank == 1)
      sleep(30);
    int64_t value = rank;
    void *all = 0;
    size_t sizes[64];
    overlap_status status =
        !strcmp(mode, "max-late")
            ? overlap_process_max(&value)
            : overlap_process_gather(&rank, sizeof rank, &all, sizes);
    printf("rank %d: %s, after rank 1's nap\n", rank,
           overlap_status_name(status));
    free(all);
    return 1;
  }
  if (!strcmp(mode, "max")) {
    int64_t value = 10 * rank + 3;
    overlap_status status = overlap_process_max(&value);
    printf("rank %d: max %s %lld\n", rank, overlap_status_name(status),
           (long long)value);
    return status != OVERLAP_SUCCESS;
  }
  overlap_host_options opts;
  overlap_host_options_init(&opts);
  opts.chaos = OVERLAP_CHAOS_OFF;
  opts.num_streams = 3;
  if (strcmp(mode, "compare")) {
    opts.wait_timeout_ms = !strcmp(mode, "missing") ? 500 : 60000;
    double start = seconds();
    overlap_status status = overlap_process_launch(size, &opts, failRank, 0);
    double took = seconds() - start;
    printf("rank %d: %s: %s (%s)\n", rank, overlap_status_name(status),
           overlap_host_launch_error(),
           took < 20 ? "released in time" : "too slow");
    return status != OVERLAP_SUCCESS && took < 20 ? 0 : 1;
  }

  if (size > kMaxRanks) {
    printf("at most %d ranks\n", kMaxRanks);
    return 1;
  }
  makeCases(size);
  byProcess = calloc(1, sizeof(Results));
  byThreads = calloc(1, sizeof(Results));
  if (overlap_process_launch(size, &opts, compareRank, byProcess)) {
    printf("rank %d: process launch failed: %s\n", rank,
           overlap_host_launch_error());
    return 1;
  }
  if (overlap_host_launch(size, &opts, compareRank, byThreads)) {
    printf("rank %d: host launch failed: %s\n", rank,
           overlap_host_launch_error());
    return 1;
  }
  int total = numCases + 3, same = 0, first = -1;
  for (int i = 0; i < total; ++i) {
    if (!memcmp((*byProcess)[rank][i], (*byThreads)[rank][i], kMaxBytes))
      ++same;
    else if (first < 0)
      first = i;
  }
  printf("rank %d of %d: %d of %d calls bit-identical to the threads", rank,
         size, same, total);
  if (first >= 0)
    printf(" (first difference: call %d)", first);
  printf("\n");
  return same == total ? 0 : 1;
}

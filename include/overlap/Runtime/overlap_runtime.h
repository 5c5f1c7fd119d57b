/*===- overlap_runtime.h - The Overlap runtime C ABI ---------------*- C
 *-*-===//
 *
 * Part of the Overlap project.
 *
 *===----------------------------------------------------------------------===//
 *
 * The calls that compiled Overlap programs make: per-rank contexts, ordered
 * streams, strided-batched GEMM, collectives over process groups, epoch-
 * counted signal/wait flags between streams, pack/unpack of strided blocks,
 * and memory. The ABI is plain C (no MLIR, no CUDA types) so generated LLVM
 * IR, C/C++ hosts and dlopen-based runners can all call it; every backend
 * (host today, CUDA later) implements the same functions. docs/runtime.md
 * describes the threading model, the determinism guarantees and the error
 * model in prose.
 *
 * Conventions shared by every call:
 *  - Every call that can fail returns an overlap_status; 0 is success.
 *  - Calls that take a `stream` enqueue work on that stream of the calling
 *    rank and return at once; the work runs later, in enqueue order with
 *    the other work of that stream. Buffers must stay valid until the work
 *    has run (until a synchronize call returns).
 *  - Errors are sticky per context: the first error is kept, its text is
 *    overlap_last_error(ctx), later calls on that context return it without
 *    doing anything, and every other rank's pending and future work fails
 *    with OVERLAP_ERROR_ABORTED instead of hanging.
 *  - `tile` is a caller-chosen tag (the tile index along M; -1 for none)
 *    that appears in error messages, e.g.
 *    "overlap_all_reduce: rank 2, stream comm, tile 3: ...".
 *  - Counts, dimensions, leading dimensions and strides are in elements.
 *  - One thread per context (the rank's thread) makes the calls.
 *
 *===----------------------------------------------------------------------===*/

#ifndef OVERLAP_RUNTIME_OVERLAP_RUNTIME_H
#define OVERLAP_RUNTIME_OVERLAP_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define OVERLAP_RUNTIME_EXPORT __declspec(dllexport)
#else
#define OVERLAP_RUNTIME_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===
 * Basic types
 *===----------------------------------------------------------------------===*/

/* Result of every fallible call. The numeric values are part of the ABI. */
typedef enum overlap_status {
  OVERLAP_SUCCESS = 0,
  /* A null pointer, a negative size, a leading dimension that is too small,
     a stream or flag index out of range, an unknown dtype or reduction. */
  OVERLAP_ERROR_INVALID_ARGUMENT = 1,
  /* A wait or a collective was not satisfied within the wait timeout. */
  OVERLAP_ERROR_TIMEOUT = 2,
  /* Another rank failed first; this rank's work was abandoned. */
  OVERLAP_ERROR_ABORTED = 3,
  OVERLAP_ERROR_OUT_OF_MEMORY = 4,
  /* Valid, but not implemented by this backend. */
  OVERLAP_ERROR_UNSUPPORTED = 5,
  /* A backend library (CUDA, cuBLASLt, NCCL) reported an error. */
  OVERLAP_ERROR_BACKEND = 6,
  OVERLAP_ERROR_INTERNAL = 7
} overlap_status;

/* Element types. f16 and bf16 are stored as uint16_t bit patterns. The
   GEMM takes the float types f32, f16 and bf16; collectives take every
   type (integers are MLIR's signless ones: two's complement, compared as
   signed by MAX and MIN). */
typedef enum overlap_dtype {
  OVERLAP_F32 = 0,
  OVERLAP_F16 = 1,
  OVERLAP_BF16 = 2,
  OVERLAP_F64 = 3,
  OVERLAP_I8 = 4,
  OVERLAP_I16 = 5,
  OVERLAP_I32 = 6,
  OVERLAP_I64 = 7,
  /* Not a dtype: makes the enum as wide as an int, so that any value a
   * caller passes is one the runtime can check (and refuse) without
   * undefined behaviour. */
  OVERLAP_DTYPE_MAX_ENUM = 0x7fffffff
} overlap_dtype;

/* Reductions. All of them are computed in group-rank order (0, 1, 2, ...):
   for f32, f16 and bf16 in f32, rounded once to the element type; for f64
   in f64; for integers in the type itself, wrapping around on overflow
   (SUM, PROD) as two's complement does. AVG is the sum divided by the
   group size (for integers, the wrapped sum truncated towards zero). */
typedef enum overlap_reduce_op {
  OVERLAP_SUM = 0,
  OVERLAP_PROD = 1,
  OVERLAP_MAX = 2,
  OVERLAP_MIN = 3,
  OVERLAP_AVG = 4,
  /* Not a reduction: any int value can be checked (see overlap_dtype). */
  OVERLAP_REDUCE_MAX_ENUM = 0x7fffffff
} overlap_reduce_op;

/* The two streams every context has. Further streams are 2, 3, ... up to
   overlap_context_num_streams(ctx) - 1. */
enum { OVERLAP_STREAM_COMPUTE = 0, OVERLAP_STREAM_COMM = 1 };

/* Passed as `color` to overlap_group_split by ranks that join no group. */
#define OVERLAP_UNDEFINED_COLOR (-1)

/* Opaque handles. A context is one rank; groups and signal sets belong to a
   context and live until it is destroyed (or until destroyed explicitly). */
typedef struct overlap_context overlap_context;
typedef struct overlap_group overlap_group;
typedef struct overlap_signals overlap_signals;

/* A short constant name for a status, e.g. "OVERLAP_ERROR_TIMEOUT". */
OVERLAP_RUNTIME_EXPORT const char *overlap_status_name(overlap_status status);

/* The first error recorded on `ctx`, as a sentence that names the call, the
   rank, the stream and the tile or flag, e.g.
   "overlap_wait: rank 2, stream comm, flag 3: not signalled within 5000 ms".
   "" when there was none. The text stays valid as long as the context. */
OVERLAP_RUNTIME_EXPORT const char *overlap_last_error(overlap_context *ctx);

/* The context's sticky status, without waiting for queued work. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_context_status(overlap_context *ctx);

/*===----------------------------------------------------------------------===
 * Host backend: ranks are threads of this process
 *===----------------------------------------------------------------------===*/

/* The longest wait timeout (milliseconds, about 11.6 days) that
   overlap_host_options, overlap_cuda_options and $OVERLAP_WAIT_TIMEOUT_MS
   may give; a larger one is an OVERLAP_ERROR_INVALID_ARGUMENT. */
#define OVERLAP_MAX_WAIT_TIMEOUT_MS INT64_C(1000000000)
/* The longest chaos delay (microseconds, 10 s) that
   overlap_host_options.chaos_max_delay_us and $OVERLAP_HOST_CHAOS_MAX_US
   may give. */
#define OVERLAP_MAX_CHAOS_DELAY_US INT64_C(10000000)

/* overlap_host_options.chaos */
enum {
  OVERLAP_CHAOS_FROM_ENV = 0, /* on iff OVERLAP_HOST_CHAOS=<seed> is set */
  OVERLAP_CHAOS_OFF = 1,
  OVERLAP_CHAOS_ON = 2 /* on, with chaos_seed */
};

/* Options of overlap_host_launch. Initialize with overlap_host_options_init
   and change fields; zero means "the default". */
typedef struct overlap_host_options {
  /* sizeof(overlap_host_options); lets the struct grow compatibly. */
  uint32_t struct_size;
  /* Streams per context; 0 means 2 (compute and comm). At most 16. */
  int32_t num_streams;
  /* How long a wait or a collective may block before it fails with
     OVERLAP_ERROR_TIMEOUT. 0 means $OVERLAP_WAIT_TIMEOUT_MS, else 10000. At
     most OVERLAP_MAX_WAIT_TIMEOUT_MS. */
  int64_t wait_timeout_ms;
  /* Chaos mode: random delays (seeded per rank and stream) before stream
     tasks, so that a missing wait shows up as a wrong result: the task a
     signal follows is always held back, others now and then
     (docs/runtime.md). */
  int32_t chaos;
  uint64_t chaos_seed;
  /* Upper bound of one chaos delay; 0 means $OVERLAP_HOST_CHAOS_MAX_US,
     else 1000. At most OVERLAP_MAX_CHAOS_DELAY_US. */
  int64_t chaos_max_delay_us;
} overlap_host_options;

/* Fills `opts` with the defaults (every field "use the default"). */
OVERLAP_RUNTIME_EXPORT void
overlap_host_options_init(overlap_host_options *opts);

/* Runs `fn(ctx, user)` once per rank, each on its own thread with its own
   context (rank 0 .. ranks-1 of a world of `ranks`), and returns when all
   have returned and all their streams have drained. `opts` may be NULL.
   Returns the first error of any rank (the root cause, not the
   OVERLAP_ERROR_ABORTED of the ranks it took down); its text is then
   overlap_host_launch_error(). Contexts are destroyed on return. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_host_launch(int ranks, const overlap_host_options *opts,
                    void (*fn)(overlap_context *ctx, void *user), void *user);

/* The error text of the last overlap_host_launch made by this thread, or
   "" if it succeeded. */
OVERLAP_RUNTIME_EXPORT const char *overlap_host_launch_error(void);

/*===----------------------------------------------------------------------===
 * Context
 *===----------------------------------------------------------------------===*/

/* Calls fn(arg) on this thread, where a failed run-time check of a compiled
   program (overlap_check_failed) fails `ctx` with the check's message and
   returns here (OVERLAP_ERROR_INVALID_ARGUMENT) instead of ending the
   process: the other ranks' waits on this one then fail with that error.
   What fn had allocated when its check failed is not freed. fn must be the
   call of a compiled entry (C frames only: a longjmp leaves them). */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_context_call_guarded(
    overlap_context *ctx, void (*fn)(void *arg), void *arg);

/* What a compiled program calls when a run-time check fails (`message`,
   `length` bytes): inside overlap_context_call_guarded it fails that context
   and returns to the guard; elsewhere it writes the message to stderr and
   aborts. It does not return. */
OVERLAP_RUNTIME_EXPORT void overlap_check_failed(const char *message,
                                                 int64_t length);

/* This context's rank in the world, and the world's size. */
OVERLAP_RUNTIME_EXPORT int overlap_context_rank(overlap_context *ctx);
OVERLAP_RUNTIME_EXPORT int overlap_context_size(overlap_context *ctx);

/* Number of streams; valid stream indices are 0 .. n-1. */
OVERLAP_RUNTIME_EXPORT int overlap_context_num_streams(overlap_context *ctx);

/* The group of all ranks (group rank = world rank). Owned by the context. */
OVERLAP_RUNTIME_EXPORT overlap_group *
overlap_context_world(overlap_context *ctx);

/* Blocks until all work enqueued so far on `stream` has run; returns the
   context's status. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_stream_synchronize(overlap_context *ctx, int32_t stream);

/* Blocks until every stream of the context has drained (the end of an
   `overlap.concurrent`); returns the context's status. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_context_synchronize(overlap_context *ctx);

/* Orders the streams without blocking the host: work enqueued on any
   stream after this call starts only after all work enqueued on every
   stream before it (CUDA: an event per stream, waited for by the others).
   What compiled programs use between their sequential ops and after an
   `overlap.concurrent` on a device; the host backend, whose inline ops run
   on the calling thread, synchronizes instead. Returns the context's
   status. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_streams_join(overlap_context *ctx);

/*===----------------------------------------------------------------------===
 * Groups
 *===----------------------------------------------------------------------===*/

/* Splits `parent` (NULL: the world) like MPI_Comm_split. Collective over all
   ranks of `parent`, called from the rank's thread (not enqueued); it is
   ordered with the parent's other collectives by call order. Ranks passing
   the same `color` (>= 0) form one new group, ordered by (key, parent
   rank); ranks passing OVERLAP_UNDEFINED_COLOR get *group = NULL.

   Grid axes: for a grid of shape (s0, s1, ...) and a rank with coordinates
   (c0, c1, ...) (row-major: rank = ((c0*s1)+c1)*s2+...), the group over
   grid axes A takes color = the linear index of the coordinates NOT in A,
   and key = the linear index of the coordinates in A (in the order of A).
   E.g. shape 2x4, axes [1]: color = c0, key = c1 -> 2 groups of 4.

   The group belongs to the context; overlap_group_destroy frees it early. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_group_split(overlap_context *ctx, overlap_group *parent, int color,
                    int key, overlap_group **group);

/* overlap_group_split made once per context: the first call with a given
   (parent, tag, color, key) splits `parent` (NULL: the world), collectively,
   as overlap_group_split does; every later call with the same four returns
   the same group (NULL for OVERLAP_UNDEFINED_COLOR) at once, without any
   communication. What compiled programs call at each entry, so that a
   communicator is made once per context, not once per call.

   `tag` names the partition of the parent that color and key describe:
   (color, key) alone do not say who else is in the group (rank 0 of a
   4-rank world has color 0, key 0 both in the group of a 4-rank grid's
   axis 0 and in that of a 2x2 grid's axis 1), so equal tags must mean equal
   memberships. The compiler passes a hash of the grid's shape and the
   group's axes. Because a first call is collective and a later one is not,
   every rank of the parent must make the same sequence of calls (the same
   tags, in the same order).

   The group belongs to the context and lives until the context is
   destroyed; overlap_group_destroy frees it early, and the next call with
   the same (parent, tag, color, key) then splits again. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_group_split_cached(
    overlap_context *ctx, overlap_group *parent, uint64_t tag, int color,
    int key, overlap_group **group);

/* This rank's index in `group`, and the group's size. */
OVERLAP_RUNTIME_EXPORT int overlap_group_rank(overlap_group *group);
OVERLAP_RUNTIME_EXPORT int overlap_group_size(overlap_group *group);

/* Frees a group made by overlap_group_split or overlap_group_split_cached
   after the work that uses it has run. The cached splits that returned it,
   or were made with it as the parent, are forgotten. The world group cannot
   be destroyed. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_group_destroy(overlap_context *ctx, overlap_group *group);

/*===----------------------------------------------------------------------===
 * Memory and copies
 *===----------------------------------------------------------------------===*/

/* Allocates `bytes` of memory the backend's GEMMs and collectives can use
   (host: 64-byte aligned; CUDA: device memory from cudaMalloc, usable at
   once by the host and every stream). `ctx` may be NULL on the host.
   *ptr is NULL for 0 bytes. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_alloc(overlap_context *ctx,
                                                    size_t bytes, void **ptr);

/* Frees memory from overlap_alloc; NULL is ignored. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_free(overlap_context *ctx,
                                                   void *ptr);

/* Stream-ordered allocation, what compiled programs use for their
   temporaries: the memory is usable by work enqueued on `stream` after this
   call (`stream` = -1: on every stream of the context), not by the host
   before a synchronize. CUDA: cudaMallocFromPoolAsync on a pool the context
   keeps (no device-wide synchronization), or cudaMalloc when the context's
   stream_ordered_alloc option is off. Host backend: as overlap_alloc. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_alloc_async(overlap_context *ctx,
                                                          int32_t stream,
                                                          size_t bytes,
                                                          void **ptr);

/* Frees memory from overlap_alloc_async after the work enqueued so far on
   `stream` (-1: on every stream) without blocking the host (CUDA pool:
   cudaFreeAsync). NULL is ignored. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_free_async(overlap_context *ctx,
                                                         int32_t stream,
                                                         void *ptr);

/* Enqueues a copy of `bytes` bytes (the ranges must not overlap). */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_memcpy(overlap_context *ctx,
                                                     int32_t stream,
                                                     int64_t tile, void *dst,
                                                     const void *src,
                                                     size_t bytes);

/* Enqueues setting `bytes` bytes at `dst` to the byte `value` (0..255):
   a fill whose element's bytes are all equal (zero, all ones), which the
   compiler lowers here instead of a loop nest or a kernel (CUDA:
   cudaMemsetAsync). */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_memset(overlap_context *ctx,
                                                     int32_t stream,
                                                     int64_t tile, void *dst,
                                                     int32_t value,
                                                     size_t bytes);

/* Enqueues a call of `fn(user)` on the stream, e.g. elementwise code the
   compiler outlined into a stream region (CUDA: cudaLaunchHostFunc). */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_launch_host_func(
    overlap_context *ctx, int32_t stream, void (*fn)(void *user), void *user);

/*===----------------------------------------------------------------------===
 * GEMM
 *===----------------------------------------------------------------------===*/

/* overlap_gemm's flags, or-ed. */
typedef enum overlap_gemm_flag {
  /* A[b] is stored k x m (its transpose is used; lda >= m). */
  OVERLAP_GEMM_TRANSPOSE_A = 1,
  /* B[b] is stored n x k (its transpose is used; ldb >= k): a weight in
     PyTorch's [out, in] layout. */
  OVERLAP_GEMM_TRANSPOSE_B = 2,
  /* C[b] is written, never read: the sum starts from +0.0 instead of C
     (beta = 0), so C needs no fill first. */
  OVERLAP_GEMM_OVERWRITE = 4
} overlap_gemm_flag;

/* Enqueues the strided-batched GEMM, for b in [0, batch):
     C[b] (m x n) = C[b] + op(A[b]) (m x k) . op(B[b]) (k x n)
   with row-major matrices: element (i, j) of X[b] is at
   x + b * stride_x + i * ldx + j; op(X) is X, or its transpose with
   OVERLAP_GEMM_TRANSPOSE_A / _B in `flags` (then A is stored k x m, B
   n x k). With OVERLAP_GEMM_OVERWRITE C[b] is not read (C[b] = op(A).op(B)).
   A and B have type `ab_type`; C has type `c_type`, which is f32 or equal to
   `ab_type`. Products are accumulated in f32 in the order C (or +0.0),
   then k = 0, 1, ..., k-1, and rounded once to `c_type` (an f32 sum rounded
   to f16/bf16 by the GEMM: no f32 buffer and no rounding pass); each
   output row is computed the same way whatever m is, so splitting a GEMM
   along M into tiles gives bit-identical results. A stride of 0 for A or B
   reuses (broadcasts) one matrix for every batch; stride_c must not make
   the C matrices overlap. Requires lda >= k (m transposed), ldb >= n (k
   transposed), ldc >= n, and no flag bits but the three above. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_gemm(overlap_context *ctx, int32_t stream, int64_t tile, int64_t batch,
             int64_t m, int64_t n, int64_t k, overlap_dtype ab_type,
             const void *a, int64_t lda, int64_t stride_a, const void *b,
             int64_t ldb, int64_t stride_b, overlap_dtype c_type, void *c,
             int64_t ldc, int64_t stride_c, int32_t flags);

/*===----------------------------------------------------------------------===
 * Collectives
 *
 * Enqueued on a stream; matched across the ranks of `group` (NULL: the
 * world) by the order in which each rank issues its collectives on that
 * group, as with NCCL. Each rank's buffers must be distinct from the other
 * ranks'. Results are identical on every rank and independent of timing.
 *===----------------------------------------------------------------------===*/

/* dst[i] = op over group ranks g = 0, 1, ... of src_g[i], for i < count.
   src == dst (in place) is allowed. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_all_reduce(
    overlap_context *ctx, int32_t stream, int64_t tile, overlap_group *group,
    overlap_dtype dtype, overlap_reduce_op op, const void *src, void *dst,
    int64_t count);

/* src holds G blocks of `count` elements (G = group size); group rank r
   receives in dst the reduction of block r over all ranks.
   dst == src + r * count (in place) is allowed. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_reduce_scatter(
    overlap_context *ctx, int32_t stream, int64_t tile, overlap_group *group,
    overlap_dtype dtype, overlap_reduce_op op, const void *src, void *dst,
    int64_t count);

/* dst (G * count elements) receives group rank g's src (count elements) as
   block g. src == dst + r * count (in place) is allowed. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_all_gather(
    overlap_context *ctx, int32_t stream, int64_t tile, overlap_group *group,
    overlap_dtype dtype, const void *src, void *dst, int64_t count);

/* Expert-parallel token exchange. src holds G blocks of `count` elements
   (G = group size): block j goes to group rank j. dst holds G blocks of
   `count` elements: block j came from group rank j (its src block r, for
   this rank r). Block r stays on the rank (copied from src to dst). `count`
   is per peer, so each buffer holds G * count elements; src and dst must
   not overlap. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_all_to_all(
    overlap_context *ctx, int32_t stream, int64_t tile, overlap_group *group,
    overlap_dtype dtype, const void *src, void *dst, int64_t count);

/* Collective permute by a fixed offset: group rank r sends src (`count`
   elements) to group rank (r + shift) mod G and receives into dst the src
   of group rank (r - shift) mod G (G = group size; shift may be negative
   or >= G, taken mod G). shift = 0 mod G copies src to dst (src == dst
   allowed then); otherwise src and dst must not overlap (partial overlap is
   refused for every shift). Every rank of the group calls it with the same
   shift (mod G) and count; ranks whose shifts differ fail as mismatched
   collectives. The rank-major steps of a decomposed reduce-scatter or
   all-gather: on step s every rank exchanges one contiguous block. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_shift(
    overlap_context *ctx, int32_t stream, int64_t tile, overlap_group *group,
    overlap_dtype dtype, int64_t shift, const void *src, void *dst,
    int64_t count);

/* The collective calls enqueued on `stream` between overlap_fuse_begin and
   overlap_fuse_end run as one launch where the backend can (CUDA: NCCL's
   ncclGroupStart / ncclGroupEnd, so several point-to-point shifts to
   different peers pay one launch); their results are those of the calls
   in order. Waits enqueued in between hold back the fused launch; work
   that must follow a fused call (a signal) is enqueued after
   overlap_fuse_end. Begin/end pairs nest per stream; an end without a
   begin is OVERLAP_ERROR_INVALID_ARGUMENT. The host backends run the calls
   as they come. The grouped exchanges of a rank-major tile. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_fuse_begin(overlap_context *ctx,
                                                         int32_t stream);
OVERLAP_RUNTIME_EXPORT overlap_status overlap_fuse_end(overlap_context *ctx,
                                                       int32_t stream);

/* No rank's later work on `stream` starts before every rank of the group
   has reached the barrier. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_barrier(overlap_context *ctx,
                                                      int32_t stream,
                                                      int64_t tile,
                                                      overlap_group *group);

/*===----------------------------------------------------------------------===
 * Signal / wait between the streams of one rank
 *
 * A signal set holds `n` flags and an epoch (starting at 1). overlap_signal
 * and overlap_wait capture the epoch current when they are enqueued: the
 * signal raises the flag to that epoch once all earlier work of its stream
 * has run; the wait holds back later work of its stream until the flag has
 * reached that epoch (CUDA: cuStreamWriteValue32 / cuStreamWaitValue32 GEQ).
 * Bumping the epoch once per call of the enclosing function makes the
 * flags reusable without a reset. A wait that is not satisfied within the
 * wait timeout fails with OVERLAP_ERROR_TIMEOUT and a message naming rank,
 * stream and flag; it never hangs.
 *===----------------------------------------------------------------------===*/

/* Creates a set of `n` (>= 1) lowered flags at epoch 1. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_signals_create(overlap_context *ctx, int32_t n, overlap_signals **sigs);

/* Returns the context's signal set registered under (`key`, `n`) (key: e.g.
   a number the compiler gives each `overlap.concurrent`), creating it with
   `n` flags on first use and bumping its epoch on every later use: call it
   once at the start of each execution of the region. The same key with
   another `n` is another set, so two programs on one context (a plan and
   its one-tile reference) never share one. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_signals_acquire(
    overlap_context *ctx, int64_t key, int32_t n, overlap_signals **sigs);

/* Starts a new epoch: signals and waits enqueued from now on use it. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_signals_next_epoch(overlap_context *ctx, overlap_signals *sigs);

/* Frees a set made by overlap_signals_create once no queued work uses it
   (after a synchronize). Sets from overlap_signals_acquire are freed with
   the context. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_signals_destroy(overlap_context *ctx, overlap_signals *sigs);

/* Enqueues: raise flag `index` once all earlier work on `stream` has run. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_signal(overlap_context *ctx,
                                                     int32_t stream,
                                                     overlap_signals *sigs,
                                                     int32_t index);

/* Enqueues: later work on `stream` waits until flag `index` is raised. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_wait(overlap_context *ctx,
                                                   int32_t stream,
                                                   overlap_signals *sigs,
                                                   int32_t index);

/*===----------------------------------------------------------------------===
 * Pack / unpack of strided blocks (one routine per block, not one copy per
 * row; on CUDA one kernel, after the GPU MPI_Pack design)
 *
 * The block has extents n0 x n1 x n2 of `elem_bytes`-byte elements; element
 * (i0, i1, i2) of the strided side is at base + (i0*s0 + i1*s1 + i2) *
 * elem_bytes, and at ((i0*n1 + i1)*n2 + i2) * elem_bytes in the packed
 * buffer. A 2-D block is n0 = 1. overlap_unpack requires s1 >= n2 (when
 * n1 > 1) and s0 >= (n1 - 1) * s1 + n2 (when n0 > 1), so that no element is
 * written twice; overlap_pack may read overlapping rows.
 *===----------------------------------------------------------------------===*/

/* Enqueues: packed = strided block of src. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_pack(overlap_context *ctx, int32_t stream, int64_t tile,
             int64_t elem_bytes, const void *src, int64_t n0, int64_t n1,
             int64_t n2, int64_t s0, int64_t s1, void *packed);

/* Enqueues: strided block of dst = packed. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_unpack(overlap_context *ctx, int32_t stream, int64_t tile,
               int64_t elem_bytes, const void *packed, int64_t n0, int64_t n1,
               int64_t n2, int64_t s0, int64_t s1, void *dst);

/*===----------------------------------------------------------------------===
 * Number conversions (round to nearest even; NaN stays NaN)
 *===----------------------------------------------------------------------===*/

OVERLAP_RUNTIME_EXPORT uint16_t overlap_f32_to_f16(float value);
OVERLAP_RUNTIME_EXPORT float overlap_f16_to_f32(uint16_t bits);
OVERLAP_RUNTIME_EXPORT uint16_t overlap_f32_to_bf16(float value);
OVERLAP_RUNTIME_EXPORT float overlap_bf16_to_f32(uint16_t bits);

/* Bytes per element of `dtype` (4 or 2), 0 if unknown. */
OVERLAP_RUNTIME_EXPORT size_t overlap_dtype_size(overlap_dtype dtype);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVERLAP_RUNTIME_OVERLAP_RUNTIME_H */

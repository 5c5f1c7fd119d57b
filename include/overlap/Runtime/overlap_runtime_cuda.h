/*===- overlap_runtime_cuda.h - CUDA backend of the Overlap runtime -*- C
 *-*-===//
 *
 * Part of the Overlap project.
 *
 *===----------------------------------------------------------------------===//
 *
 * Creating and destroying contexts of the CUDA backend. Everything else
 * (GEMM, collectives, signal/wait, pack, memory) is the backend-neutral ABI
 * of overlap_runtime.h, called on a context made here. The backend lives in
 * liboverlap_runtime_cuda.so, which exports that whole ABI (the host backend
 * included) plus the functions below and the mgpu* entry points of MLIR's
 * GPU lowering; liboverlap_runtime.so stays free of CUDA. docs/cuda.md
 * describes the backend.
 *
 * No CUDA type appears here: an ncclComm_t, a cudaStream_t and an
 * ncclUniqueId travel as `void *` / bytes, so callers need no CUDA headers.
 *
 *===----------------------------------------------------------------------===*/

#ifndef OVERLAP_RUNTIME_OVERLAP_RUNTIME_CUDA_H
#define OVERLAP_RUNTIME_OVERLAP_RUNTIME_CUDA_H

#include "overlap/Runtime/overlap_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* overlap_cuda_options.sync: how overlap_signal / overlap_wait work. */
enum {
  /* $OVERLAP_CUDA_SYNC ("memop", "spin" or "event"), else memop. */
  OVERLAP_CUDA_SYNC_FROM_ENV = 0,
  /* cuStreamWriteValue32 / cuStreamWaitValue32(GEQ) on epoch-counted flags
     in device-mapped host memory: no SM is used. */
  OVERLAP_CUDA_SYNC_MEMOP = 1,
  /* Signal: a one-thread kernel storing the epoch with release semantics;
     wait: a one-thread kernel polling with acquire loads and __nanosleep,
     which gives up after the wait timeout and records an error. */
  OVERLAP_CUDA_SYNC_SPIN = 2,
  /* cudaEventRecord / cudaStreamWaitEvent. A wait must be enqueued after
     the signal it waits for (else OVERLAP_ERROR_UNSUPPORTED). */
  OVERLAP_CUDA_SYNC_EVENT = 3
};

/* overlap_cuda_options.comm_sms: $OVERLAP_COMM_SMS, else
   OVERLAP_CUDA_DEFAULT_COMM_SMS. */
#define OVERLAP_CUDA_COMM_SMS_DEFAULT (-1)
/* SMs kept for communication when nothing says otherwise (the H100
   profiles' device.comm_sms). */
#define OVERLAP_CUDA_DEFAULT_COMM_SMS 16

/* The on/off knobs of overlap_cuda_options (comm_priority, device_flags,
   gemm_cache, stream_ordered_alloc, nccl_cta_cap, zero_sm_all_gather). */
enum {
  /* The knob's environment variable, else its default (docs/cuda.md). */
  OVERLAP_CUDA_KNOB_DEFAULT = 0,
  OVERLAP_CUDA_KNOB_ON = 1,
  OVERLAP_CUDA_KNOB_OFF = 2
};

/* Options of the creation functions. Initialize with
   overlap_cuda_options_init; zero means "the default" except for comm_sms,
   whose default is OVERLAP_CUDA_COMM_SMS_DEFAULT (0 there means "reserve
   nothing"). A caller compiled against an older, shorter struct (smaller
   struct_size) gets the defaults of the fields it does not have. */
typedef struct overlap_cuda_options {
  /* sizeof(overlap_cuda_options); lets the struct grow compatibly. */
  uint32_t struct_size;
  /* Streams per context; 0 means 2 (compute and comm, which may be handed
     in). Streams 2.. are created by the context. At most 16. */
  int32_t num_streams;
  /* How long a synchronize may wait for the streams, and how long a spin
     wait polls, before OVERLAP_ERROR_TIMEOUT. 0 means
     $OVERLAP_WAIT_TIMEOUT_MS, else 10000. */
  int64_t wait_timeout_ms;
  /* One of OVERLAP_CUDA_SYNC_*. */
  int32_t sync;
  /* cuBLASLt workspace per stream in bytes; 0 means 32 MiB. */
  int64_t gemm_workspace_bytes;
  /* Nonzero: f32 GEMMs may use TF32 tensor cores (faster, ~10 mantissa
     bits). Default off: f32 GEMMs compute in full f32. */
  int32_t allow_tf32;
  /* Nonzero: batched GEMMs with a batch stride of 0 for A or B run as one
     cuBLASLt call per batch instead of one strided-batched call. */
  int32_t gemm_loop_broadcast;
  /* SMs reserved for communication. Tile GEMMs get cuBLASLt's
     CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET = SMs - comm_sms, and the
     communicators the context creates (bootstrap, splits) get NCCL CTA
     limits from the same budget (minCTAs = 1, maxCTAs = comm_sms). 0: no
     reservation (GEMMs may fill the GPU, NCCL chooses its CTAs). A value
     >= the device's SM count is an error at creation.
     OVERLAP_CUDA_COMM_SMS_DEFAULT: $OVERLAP_COMM_SMS, else 16. */
  int32_t comm_sms;
  /* ON: the comm stream (index 1) is created at the device's highest
     priority, the others at the lowest, so that a collective's CTAs are
     scheduled before queued GEMM CTAs. OFF: default priority. A stream
     handed in by the caller keeps its own. Default: $OVERLAP_COMM_PRIORITY
     ("high" or "normal"), else ON. */
  int32_t comm_priority;
  /* ON: signal/wait flags live in device memory (cudaMalloc); memop waits
     then poll device memory instead of crossing PCIe. OFF: device-mapped
     host memory. Default: $OVERLAP_CUDA_FLAGS ("device" or "host"), else
     ON. */
  int32_t device_flags;
  /* ON: the cuBLASLt matmul descriptor, the three matrix layouts and the
     algorithm are made once per GEMM shape and kept. OFF: made and
     destroyed on every call (the algorithm is still kept). Default:
     $OVERLAP_GEMM_CACHE ("on" or "off"), else ON. */
  int32_t gemm_cache;
  /* 1: the heuristic's first algorithm. k > 1: the first time a shape is
     seen, the heuristic's top k are timed (on a private stream, with
     private operands of the shape; the host waits for those runs alone,
     once per shape, and no other stream waits) and the fastest is kept;
     overlap_cuda_gemm_report says which. 0: $OVERLAP_GEMM_AUTOTUNE, else
     1. At most 16. */
  int32_t gemm_autotune;
  /* ON: overlap_alloc/overlap_free are stream-ordered (cudaMallocAsync /
     cudaFreeAsync on a pool kept by the context, the other streams joined
     by events): no device-wide synchronization. OFF: cudaMalloc/cudaFree.
     Default: $OVERLAP_CUDA_ALLOC ("pool" or "sync"), else ON. */
  int32_t stream_ordered_alloc;
  /* ON: with comm_sms > 0, the communicators the context creates get
     NCCL's CTA limits from the budget (minCTAs = 1, maxCTAs = comm_sms, a
     CGA cluster dividing it), so that every channel of a collective is
     resident beside a GEMM that leaves comm_sms SMs free. OFF: NCCL
     chooses its CTAs (its full channel count, which multi-GPU bandwidth
     may need) while the tile GEMMs keep their SM target. Default:
     $OVERLAP_NCCL_CTA_CAP ("on" or "off"), else ON. */
  int32_t nccl_cta_cap;
  /* ON: all-gathers run on NCCL's copy engines (no SM): per (group,
     stream) a communicator split with CTAPolicy = NCCL_CTA_POLICY_ZERO and
     a staging buffer registered as a symmetric window; the source is
     copied in, gathered in place, and copied out. Needs NCCL >= 2.28, a
     driver >= 12.5 and one node; where any of it is missing the group
     falls back to the plain ncclAllGather and overlap_cuda_describe says
     why (the run never fails because of it). Other collectives are
     unaffected. Default: $OVERLAP_ZERO_SM_ALL_GATHER ("on" or "off"),
     else OFF (unmeasured). docs/cuda.md, "Zero-SM all-gather". */
  int32_t zero_sm_all_gather;
  /* overlap_cuda_context_create_rank only: how long ncclCommInitRankConfig
     may take, in ms (a peer that failed before joining, or never started,
     would block NCCL's init for ever). At the bound the creation fails
     with OVERLAP_ERROR_TIMEOUT naming the rank and the bound. 0:
     $OVERLAP_INIT_TIMEOUT_MS, else unbounded. overlap.jax.jit passes its
     init_timeout_ms (default 600000). */
  int64_t init_timeout_ms;
} overlap_cuda_options;

/* Fills `opts` with the defaults. */
OVERLAP_RUNTIME_EXPORT void
overlap_cuda_options_init(overlap_cuda_options *opts);

/* Number of CUDA devices this process can use (0 when there is no driver
   or no device); the CUDA error text, if any, goes to `error` (may be
   NULL) and stays valid until the next call on this thread. */
OVERLAP_RUNTIME_EXPORT int overlap_cuda_device_count(const char **error);

/* A context over a communicator and streams the caller owns (a framework
   hands in its own): `nccl_comm` is an ncclComm_t, `compute_stream` and
   `comm_stream` are cudaStream_t (NULL: the context creates non-blocking
   streams it owns). Rank and size are the communicator's; the device is
   the communicator's device, made current on the calling thread. The
   caller keeps ownership of what it passed; it must outlive the context.
   On failure *ctx is NULL and overlap_cuda_create_error() says why. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_cuda_context_create(
    void *nccl_comm, void *compute_stream, void *comm_stream,
    const overlap_cuda_options *opts, overlap_context **ctx);

/* Bytes of an NCCL unique id (NCCL_UNIQUE_ID_BYTES). */
#define OVERLAP_CUDA_UNIQUE_ID_BYTES 128

/* Makes an NCCL unique id on rank 0, to be sent to the other ranks by any
   out-of-band means (MPI_Bcast, a file, a socket). */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_cuda_unique_id(uint8_t id[OVERLAP_CUDA_UNIQUE_ID_BYTES]);

/* Bootstraps rank `rank` of `ranks` on CUDA device `device` from a unique
   id (ncclCommInitRank), with streams of its own. Collective over all
   ranks. The context owns the communicator and the streams. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_cuda_context_create_rank(
    const uint8_t id[OVERLAP_CUDA_UNIQUE_ID_BYTES], int ranks, int rank,
    int device, const overlap_cuda_options *opts, overlap_context **ctx);

/* One rank alone on `device` (a world of size 1): the standalone bootstrap
   of tests and single-GPU tools. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_cuda_context_create_single(
    int device, const overlap_cuda_options *opts, overlap_context **ctx);

/* Bootstraps this process's rank of a job started by a launcher, with no
   MPI library: `mpirun -np N prog` (Open MPI, MPICH, Intel MPI, MVAPICH),
   `srun`, torchrun, or OVERLAP_RANK / OVERLAP_WORLD_SIZE set by hand.
   Collective over all ranks.
   - Rank, world size and local rank come from the launcher's environment
     variables; OVERLAP_RANK / OVERLAP_WORLD_SIZE / OVERLAP_LOCAL_RANK win.
     None at all means one rank (then as overlap_cuda_context_create_single).
     A malformed or inconsistent value is OVERLAP_ERROR_INVALID_ARGUMENT
     naming the variable.
   - The device is local rank % the number of visible devices.
   - Rank 0 makes the NCCL unique id and publishes it in a rendezvous file in
     $OVERLAP_BOOTSTRAP_DIR (default /tmp/overlap-<uid>, made owner-only;
     with several nodes, a directory every node sees) named after $OVERLAP_BOOTSTRAP_KEY, else the
     launcher's job id; the other ranks poll for it for up to
     $OVERLAP_BOOTSTRAP_TIMEOUT_MS (default 60000), then fail with
     OVERLAP_ERROR_TIMEOUT naming their rank, the file and the time waited.
     If rank 0 fails before publishing, ranks already waiting fail at once
     with its reason (OVERLAP_ERROR_ABORTED).
   - Then as overlap_cuda_context_create_rank; rank 0 removes the file once
     its ncclCommInitRank has returned (every rank has read the id).
   docs/cuda.md ("Creating a context") gives the rules and what stays racy
   when a key is reused. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_cuda_context_create_launched(
    const overlap_cuda_options *opts, overlap_context **ctx);

/* Why the last creation on this thread failed ("" if it succeeded). */
OVERLAP_RUNTIME_EXPORT const char *overlap_cuda_create_error(void);

/* Drains the streams (bounded by the wait timeout; on failure the
   communicators the context owns are aborted instead of destroyed) and
   frees everything the context owns. Returns the context's final status.
   Only for contexts made by the functions above. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_cuda_context_destroy(overlap_context *ctx);

/* The cudaStream_t behind stream index `stream` (NULL if out of range or
   not a CUDA context): generated code launches its kernels there with
   mgpuLaunchKernel. */
OVERLAP_RUNTIME_EXPORT void *overlap_cuda_stream(overlap_context *ctx,
                                                 int32_t stream);

/* The ncclComm_t of `group` (NULL: the world). */
OVERLAP_RUNTIME_EXPORT void *overlap_cuda_nccl_comm(overlap_context *ctx,
                                                    overlap_group *group);

/* The CUDA device of the context, -1 if not a CUDA context. */
OVERLAP_RUNTIME_EXPORT int overlap_cuda_device(overlap_context *ctx);

/* Makes the context's device current on the calling thread (cudaSetDevice):
   compiled entry points call it first, so that their kernels and
   allocations land on the context's device, not on device 0. Not a CUDA
   context: OVERLAP_ERROR_INVALID_ARGUMENT. */
OVERLAP_RUNTIME_EXPORT overlap_status
overlap_cuda_make_current(overlap_context *ctx);

/* The context's resolved settings, one line: SMs and the GEMM SM target,
   comm_sms, stream priorities, flag memory, sync mode, GEMM cache,
   autotune, allocation, NCCL CTA cap, zero-SM all-gather (and each group
   whose zero-SM all-gather fell back, with the reason). Valid until the next call on this thread; "" if
   not a CUDA context. */
OVERLAP_RUNTIME_EXPORT const char *overlap_cuda_describe(overlap_context *ctx);

/* The SMs the context reserves for communication (comm_sms as resolved:
   the option, else $OVERLAP_COMM_SMS, else the default); -1 if not a CUDA
   context. What a profile measured with the context records. */
OVERLAP_RUNTIME_EXPORT int overlap_cuda_comm_sms(overlap_context *ctx);

/* The zero-SM all-gather of the context: 1 when the knob is on and no
   group has fallen back so far, 0 when it is off or a group fell back
   (overlap_cuda_describe says why), -1 if not a CUDA context. What a
   profile measured with the context records as
   device.zero_sm_all_gather. */
OVERLAP_RUNTIME_EXPORT int
overlap_cuda_zero_sm_all_gather(overlap_context *ctx);

/* One line per GEMM shape the context has planned: the shape, the
   algorithm kept and, when autotuned, each candidate's time. Valid until
   the next call on this thread; "" if not a CUDA context. */
OVERLAP_RUNTIME_EXPORT const char *
overlap_cuda_gemm_report(overlap_context *ctx);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVERLAP_RUNTIME_OVERLAP_RUNTIME_CUDA_H */

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

/* Options of the creation functions. Initialize with
   overlap_cuda_options_init; zero means "the default". */
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
     $OVERLAP_BOOTSTRAP_DIR (default /tmp; with several nodes, a directory
     every node sees) named after $OVERLAP_BOOTSTRAP_KEY, else the
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVERLAP_RUNTIME_OVERLAP_RUNTIME_CUDA_H */

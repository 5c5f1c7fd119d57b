/*===- overlap_runtime_process.h - Host ranks as processes ---------*- C
 *-*-===//
 *
 * Part of the Overlap project.
 *
 *===----------------------------------------------------------------------===//
 *
 * The host backend with one rank per process of an MPI job (`mpirun -np R
 * prog`), instead of R threads of one process (overlap_host_launch). Each
 * process runs its rank's function on its own thread, with one worker thread
 * per stream; signals and waits stay inside the process; collectives and
 * group splits go over MPI with the threaded backend's arithmetic (every
 * reduction in group-rank order, in f32, rounded once), so a program gives
 * the same bits either way. docs/runtime.md ("Ranks as processes")
 * describes it.
 *
 * MPI is not linked into the runtime: overlap_process_init loads
 * liboverlap_runtime_mpi.so (built when CMake finds MPI) from the runtime's
 * own directory, or from $OVERLAP_MPI_TRANSPORT, and that library links
 * libmpi. Without it every call below fails with a message that says so;
 * the threaded backend needs none of this. A job torchrun started joins
 * over TCP sockets instead (overlap_process_transport), with the same
 * semantics.
 *
 * Every call below except overlap_process_launched is collective over the
 * job: each process makes the same calls in the same order. Errors are
 * OVERLAP_ERROR_* statuses with their text in overlap_host_launch_error().
 *
 *===----------------------------------------------------------------------===*/

#ifndef OVERLAP_RUNTIME_OVERLAP_RUNTIME_PROCESS_H
#define OVERLAP_RUNTIME_OVERLAP_RUNTIME_PROCESS_H

#include "overlap/Runtime/overlap_runtime.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when a launcher whose processes make one job started this process:
   an MPI launcher (Open MPI's mpirun, MPICH's or Intel MPI's mpiexec,
   MVAPICH's mpirun_rsh), Slurm's srun or torchrun, read from its
   environment variables (OMPI_COMM_WORLD_RANK / _SIZE, SLURM_PROCID,
   RANK / WORLD_SIZE, ...): then *rank and *size are this process's rank and
   the job's size, and *launcher (if not NULL) names the launcher ("Open
   MPI", "torchrun"). 0 when no launcher's variables are set (or only
   OVERLAP_RANK, set by hand). -1 when launcher variables are set but
   malformed (OVERLAP_RANK=abc, a rank not below the size, a size without a
   rank): overlap_host_launch_error() says which, so that a caller refuses
   to run rather than fall back to running the whole grid in every process.
   Not collective; nothing is joined. */
OVERLAP_RUNTIME_EXPORT int overlap_process_launched(int *rank, int *size,
                                                    const char **launcher);

/* The transport overlap_process_init will join the job with: "mpi"
   (liboverlap_runtime_mpi.so and libmpi: the MPI launchers and srun) or
   "tcp" (TCP sockets, no MPI: torchrun; rank 0 listens at
   $OVERLAP_PROCESS_ADDR, host:port, else at $MASTER_ADDR and
   $MASTER_PORT + 2). $OVERLAP_PROCESS_TRANSPORT (mpi or tcp) overrides the
   choice; another value is returned as it is and refused by
   overlap_process_init. */
OVERLAP_RUNTIME_EXPORT const char *overlap_process_transport(void);

/* Joins the job: loads the MPI transport, initializes MPI with
   MPI_THREAD_MULTIPLE (unless the caller did) and returns this process's
   rank and the job's size. Later calls return the same at once. MPI is
   finalized at exit, or by overlap_process_finalize. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_process_init(int *rank,
                                                           int *size);

/* overlap_host_launch for this process's rank: runs `fn(ctx, user)` on the
   calling thread with a context of rank `overlap_process_init`'s rank in a
   world of `ranks`, which must be the job's size, then drains its streams.
   The first error of any rank aborts every rank (each says "abandoned: rank
   R failed first (...)"), and every process returns the same status and
   text: the root cause of the lowest rank that failed by itself. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_process_launch(
    int ranks, const overlap_host_options *opts,
    void (*fn)(overlap_context *ctx, void *user), void *user);

/* Rank 0 receives every rank's `bytes` bytes at `data`, in rank order, in a
   buffer from malloc at *all (free it with free()) and each rank's count in
   sizes[0 .. size-1]; on the other ranks *all is NULL and `sizes` is not
   read. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_process_gather(const void *data,
                                                             size_t bytes,
                                                             void **all,
                                                             size_t *sizes);

/* Every rank's *value becomes the largest *value of any rank. */
OVERLAP_RUNTIME_EXPORT overlap_status overlap_process_max(int64_t *value);

/* Finalizes MPI if overlap_process_init initialized it (also done at exit).
   No call above works afterwards. */
OVERLAP_RUNTIME_EXPORT void overlap_process_finalize(void);

#ifdef __cplusplus
}
#endif

#endif /* OVERLAP_RUNTIME_OVERLAP_RUNTIME_PROCESS_H */

//===- ProcessRun.h - Host ranks as processes of an MPI job -----*- C++ -*-===//
//
// What overlap-exec does differently under `mpirun -np R`: each process runs
// one rank (overlap_process_launch, overlap_runtime_process.h), rank 0
// gathers every rank's outputs to compare and report them, and all
// processes agree on the errors and the exit status.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_PROCESSRUN_H
#define OVERLAP_LOADER_PROCESSRUN_H

#include "overlap/Loader/Executor.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace overlap {
namespace exec {

/// How a session runs its host ranks (SessionOptions::ranksAs).
enum class RanksAs {
  /// Threads of this process (overlap_host_launch).
  Threads,
  /// One rank per process of the job this process is part of.
  Processes,
  /// Processes when a launcher started this process (mpirun, srun,
  /// torchrun: overlap_process_launched), else threads.
  Auto,
};

/// "threads", "processes", "auto"; false for anything else.
bool parseRanksAs(const std::string &text, RanksAs &mode);

/// The name parseRanksAs reads for `mode`.
const char *ranksAsName(RanksAs mode);

/// Whether `mode` means processes here; for Auto, whether a launcher
/// (mpirun, srun, torchrun) started this process, which `launcher` then
/// names (one process of srun or torchrun is no job: threads).
/// With RanksAs::Auto, false also when the launcher's variables are
/// malformed; then `error` says which (the caller must refuse to run:
/// falling back to threads would run the whole grid in every process).
bool ranksAsProcesses(RanksAs mode, std::string &launcher, std::string &error);

/// `size` host ranks, one per process of the joined job (over MPI, or TCP
/// under torchrun: overlap_process_transport); this process
/// runs rank `rank`. Its execute() is collective: every process runs it,
/// and it returns the same success on all (on failure, rank 0 has the
/// reason and the other ranks an empty one). Afterwards rank 0's Outcome
/// holds every rank's outputs (gathered from the others), the other
/// ranks' none; the timings are the slowest rank's.
std::unique_ptr<Executor>
createProcessExecutor(int rank, int size, const overlap_host_options &options);

/// Every process's outputs to rank 0, after a run: each rank sends "1" and
/// its outputs, contiguous, in outputViews' order, or "0" and why it has
/// none; rank 0 keeps them in each rank's `copies` and points
/// `outcome.outputs[r]` there. `hostViews`: this rank's outputs already in
/// host memory (a device run copies them back first); null: its
/// outputViews. Collective; false with the reason on rank 0 (the others'
/// `error` empty) when any rank has none.
bool gatherProcessOutputs(const run::Signature &sig, Outcome &outcome, int rank,
                          int size,
                          const std::vector<run::OutputView> *hostViews,
                          std::string &error);

/// Whether any process of the job is `failed` (a max over the processes):
/// a point every process reaches before a collective step, so that none
/// waits for one that will not come. False with the reason in `error`
/// when the exchange itself fails.
bool anyProcessFailed(bool failed, bool &any, std::string &error);

/// Collective: the largest `status` of any rank. On an MPI failure, 2 and
/// the reason in `error`.
int agreeOnStatus(int status, std::string &error);

/// Collective over the job: rank 0 gets every rank's `mine` in rank order in
/// `all` (the other ranks get `all` empty). On failure returns false with
/// the transport's error.
bool gatherStrings(int size, const std::string &mine,
                   std::vector<std::string> &all, std::string &error);

/// Collective, at the end of a session: rank 0 gathers every rank's
/// `errors` and passes each different one to `report` once (prefixed with
/// the ranks that had it, unless every rank had it); every rank returns the
/// largest status. `errors` of the other ranks are reported by rank 0 only.
int finishProcesses(int rank, int size, int status,
                    const std::vector<std::string> &errors,
                    const std::function<void(const std::string &)> &report);

} // namespace exec
} // namespace overlap

#endif // OVERLAP_LOADER_PROCESSRUN_H

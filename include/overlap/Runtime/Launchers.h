//===- Launchers.h - What each launcher is to a job, once -------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// One table of the launchers Overlap knows (mpirun of each MPI, srun,
// torchrun, our own OVERLAP_RANK): the name the launch detection gives
// (bootstrap::Launch::launcher, overlap_process_launched), whether its
// processes make one job, the process transport it joins over, whether one
// process alone is a job, and the command that starts N processes. The
// runtime (Bootstrap.cpp, Mpi.cpp) and the loader (ProcessRun.cpp,
// Session.cpp) read it; header only, no dependency.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_RUNTIME_LAUNCHERS_H
#define OVERLAP_RUNTIME_LAUNCHERS_H

#include <string>
#include <vector>

namespace overlap {
namespace bootstrap {

inline constexpr const char *kOverlapLauncher = "OVERLAP_RANK";
inline constexpr const char *kOpenMpi = "Open MPI";
inline constexpr const char *kMvapich = "MVAPICH";
inline constexpr const char *kMpichPmi = "MPICH/Intel MPI (PMI)";
inline constexpr const char *kTorchrun = "torchrun";
inline constexpr const char *kSlurm = "Slurm";

struct LauncherKind {
  const char *name;
  /// Its processes make one job (OVERLAP_RANK set by hand does not).
  bool job;
  /// How its processes join: "mpi" (MPI_Init; srun through PMI) or "tcp".
  const char *transport;
  /// One process alone is still a job (mpirun -np 1); srun -n 1 and a
  /// torchrun WORLD_SIZE of 1 run the grid as threads instead.
  bool oneProcessIsAJob;
  /// What starts N processes, before N: "mpirun -np ".
  const char *start;
};

inline const std::vector<LauncherKind> &launcherKinds() {
  static const std::vector<LauncherKind> kinds = {
      {kOverlapLauncher, false, "mpi", true, "mpirun -np "},
      {kOpenMpi, true, "mpi", true, "mpirun -np "},
      {kMvapich, true, "mpi", true, "mpirun -np "},
      {kMpichPmi, true, "mpi", true, "mpirun -np "},
      {kSlurm, true, "mpi", false, "srun -n "},
      {kTorchrun, true, "tcp", false, "torchrun --nproc-per-node "},
  };
  return kinds;
}

/// The row of the launcher `name`, or null (no launcher).
inline const LauncherKind *launcherKind(const std::string &name) {
  for (const LauncherKind &kind : launcherKinds())
    if (name == kind.name)
      return &kind;
  return nullptr;
}

/// "torchrun --nproc-per-node 4": how `name`'s kind starts `n` processes
/// (mpirun without a launcher).
inline std::string startCommand(const std::string &name, int n) {
  const LauncherKind *kind = launcherKind(name);
  return std::string(kind ? kind->start : "mpirun -np ") + std::to_string(n);
}

/// "mpirun -np 4 overlap-exec ... (or srun -n 4, or torchrun
/// --nproc-per-node 4" -- every way to start `n`, after mpirun's: the
/// other start commands of the job launchers, each once.
inline std::string otherStartCommands(int n) {
  std::vector<std::string> seen = {"mpirun -np "};
  std::string out;
  for (const LauncherKind &kind : launcherKinds()) {
    if (!kind.job)
      continue;
    bool known = false;
    for (const std::string &s : seen)
      known |= s == kind.start;
    if (known)
      continue;
    seen.push_back(kind.start);
    out += ", or " + std::string(kind.start) + std::to_string(n);
  }
  return out.empty() ? out : out.substr(5);
}

} // namespace bootstrap
} // namespace overlap

#endif // OVERLAP_RUNTIME_LAUNCHERS_H

//===- Session.h - Run a compiled program, as overlap-exec does --*- C++ -*-===//
//
// One call that loads a library from `overlap-compile --emit=so` (and a
// reference), runs both on their backends with the same inputs (seeded,
// given, or read from a .npz) and reports like overlap-exec: what
// overlap-exec, the C API (overlapRun) and the Python package (overlap.run)
// share.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_SESSION_H
#define OVERLAP_LOADER_SESSION_H

#include "overlap/Loader/Compare.h"
#include "overlap/Loader/Executor.h"
#include "overlap/Loader/ProcessRun.h"
#include "overlap/Loader/Run.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace overlap {
namespace exec {

/// What to run and how (overlap-exec's flags).
struct SessionOptions {
  /// The name that starts every message ("overlap-exec").
  std::string tool = "overlap-exec";
  std::string program;
  /// Empty: no reference, a checksum per output.
  std::string reference;
  /// Not null: a program the caller has already loaded (overlap-run's JIT:
  /// `path` names it in messages, `handle` is null and `entry` is the C
  /// interface), run instead of the library at `program`; the same for
  /// the reference. A program without a handle is not poisoned here: its
  /// loader registers the poisoning allocators itself.
  /// (Not const: a signature with dynamic sizes is resolved in place for
  /// the run, run::resolveArgumentShapes / resolveResultShapes.)
  Library *programLibrary = nullptr;
  Library *referenceLibrary = nullptr;
  /// What the report calls the program ("program"; overlap-run: "overlap").
  std::string programLabel = "program";
  /// 0: the size of the program's grid.
  int ranks = 0;
  /// Host ranks as threads of this process, or one per process of the MPI
  /// job that started it (overlap-exec's default is Auto: processes under
  /// mpirun). As processes, every process runs the session, rank 0 prints
  /// the report and the errors of every rank, and all return the same
  /// status.
  RanksAs ranksAs = RanksAs::Threads;
  uint64_t seed = 1;
  /// Not null: the caller's inputs, [rank][argument], instead of the seeded
  /// ones, for the program and the reference (run::GivenInputs).
  const run::GivenInputs *inputs = nullptr;
  /// With `inputs`: argument i's shape where inputShapes[i] is not empty
  /// (the same on every rank), which sets its dynamic sizes; without,
  /// a dynamic size is run::seededDynamicSize.
  std::vector<std::vector<int64_t>> inputShapes;
  /// Not empty: read the inputs from this .npz instead (npz::readInputs;
  /// overlap-exec's --inputs); not with `inputs`.
  std::string inputsNpz;
  /// Not empty: write the program's outputs to this .npz after the run
  /// (npz::writeOutputs; overlap-exec's --outputs).
  std::string outputsNpz;
  run::Tolerance tolerance;
  /// Empty: the program's target.
  std::string backend;
  /// Empty: `backend`.
  std::string refBackend;
  int device = 0;
  int iterations = 1;
  int64_t waitTimeoutMs = 0;
  std::optional<uint64_t> chaos;
  int64_t chaosMaxUs = 0;
  bool verbose = false;
};

/// Where the session writes: the report (`out`, a line or more at a time,
/// the first before anything runs) and errors and warnings (`err`).
struct SessionOutput {
  std::function<void(const std::string &)> out;
  std::function<void(const std::string &)> err;
  /// When set, called once the program has run with every output of every
  /// rank in host memory, [rank][output] in run::outputViews' order (the
  /// views are valid during the call only).
  std::function<void(const run::Signature &,
                     const std::vector<std::vector<run::OutputView>> &)>
      outputs;
};

/// Runs the session. Returns overlap-exec's exit status: 0 when every
/// output matches (or, without a reference, the run succeeded), 1 on a
/// mismatch, 2 on a load, signature or runtime error, 3 when the CUDA
/// backend cannot run here.
int runSession(const SessionOptions &options, const SessionOutput &output);

} // namespace exec
} // namespace overlap

#endif // OVERLAP_LOADER_SESSION_H

//===- Session.h - Run a compiled program, as overlap-exec does --*- C++
//-*-===//
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
#include "overlap/Loader/RunOptions.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace overlap {
namespace exec {

/// What to run and how: the rows of RunOptions.def (overlap-exec's flags,
/// the C API's OverlapRunOptions, overlap.run's keywords), then what only
/// a caller in C++ gives (libraries already loaded, inputs in memory).
struct SessionOptions {
#define OVERLAP_RUN_OPTION(GROUP, FIELD, FLAG, KIND, DEFAULT, LOW, HIGH, UNIT, \
                           ZERO, META, HELP)                                   \
  OVERLAP_RUN_OPTION_CXX_##KIND FIELD = DEFAULT;
#include "overlap/Loader/RunOptions.def"

  /// The name that starts every message ("overlap-exec").
  std::string tool = "overlap-exec";
  std::string program;
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
  /// Not null: the caller's inputs, [rank][argument], instead of the seeded
  /// ones, for the program and the reference (run::GivenInputs); not with
  /// inputsNpz.
  const run::GivenInputs *inputs = nullptr;
  /// With `inputs`: argument i's shape where inputShapes[i] is not empty
  /// (the same on every rank), which sets its dynamic sizes; without,
  /// a dynamic size is run::seededDynamicSize.
  std::vector<std::vector<int64_t>> inputShapes;

  run::Tolerance tolerance() const { return {rtol, atol}; }
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

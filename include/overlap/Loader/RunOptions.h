//===- RunOptions.h - The rows of RunOptions.def, as data -------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The run options (RunOptions.def) as a table a front end walks: overlap-
// exec's and overlap-run's flags, their help and errors, the C API's
// conversion of OverlapRunOptions and its layout for Python. Every value is
// checked here, whichever front end set it (checkRunOptions), so a bad
// value says the same thing from a flag, from C and from Python.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_RUNOPTIONS_H
#define OVERLAP_LOADER_RUNOPTIONS_H

#include "overlap/Loader/ProcessRun.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

// The C++ type of each KIND of RunOptions.def.
#define OVERLAP_RUN_OPTION_CXX_PATH std::string
#define OVERLAP_RUN_OPTION_CXX_CHOICE std::string
#define OVERLAP_RUN_OPTION_CXX_RANKS_AS ::overlap::exec::RanksAs
#define OVERLAP_RUN_OPTION_CXX_INT int
#define OVERLAP_RUN_OPTION_CXX_INT64 int64_t
#define OVERLAP_RUN_OPTION_CXX_UINT64 uint64_t
#define OVERLAP_RUN_OPTION_CXX_SEED std::optional<uint64_t>
#define OVERLAP_RUN_OPTION_CXX_DOUBLE double
#define OVERLAP_RUN_OPTION_CXX_BOOL bool

namespace overlap {
namespace exec {

struct SessionOptions;

enum class RunGroup { Run, Library };
enum class RunKind {
  Path,
  Choice,
  RanksAs,
  Int,
  Int64,
  UInt64,
  Seed,
  Double,
  Bool
};

/// One row of RunOptions.def.
struct RunOption {
  RunGroup group;
  const char *field;
  const char *flag;
  RunKind kind;
  int64_t low, high;
  const char *unit, *zero, *meta, *help;
};

/// The rows, in the order of RunOptions.def.
const std::vector<RunOption> &runOptions();

/// The row whose FLAG is `flag` ("ranks", "v"), or null.
const RunOption *findRunOption(const std::string &flag);

/// How a tool spells the row's flag: "--ranks", "-v".
std::string flagSpelling(const RunOption &row);

/// What the row's values may be: "0 (the size of the program's grid) to
/// 1024 ranks", "host or cuda", "a finite number >= 0".
std::string expectedValue(const RunOption &row);

/// The row's default in `defaults` (a tool's, where it differs from the
/// table's), for the help: "default 1", "default: the program's target",
/// or "" for a path or a switch.
std::string defaultText(const RunOption &row, const SessionOptions &defaults);
std::string defaultText(const RunOption &row);

/// The row's help with its default: what a tool's help prints.
std::string helpText(const RunOption &row, const SessionOptions &defaults);
std::string helpText(const RunOption &row);

/// Sets the row's field of `o` from `text` (a flag's value; "1" for a
/// switch). Returns "" or the error: "--ranks '2000': expected 0 (...) to
/// 1024 ranks", naming the value as `name` (default: the flag).
std::string setRunOption(SessionOptions &o, const RunOption &row,
                         const std::string &text, const std::string &name = "");

/// Checks every value of `o` against its row (ranges, choices, finite
/// tolerances), however it was set. Returns "" or the first error, naming
/// the value as `name` spells the row ("--wait-timeout-ms",
/// "OverlapRunOptions.waitTimeoutMs") and the value: "--rtol nan: expected
/// a finite number >= 0".
std::string
checkRunOptions(const SessionOptions &o,
                const std::function<std::string(const RunOption &)> &name);

/// checkRunOptions naming every row by its flag.
std::string checkRunOptions(const SessionOptions &o);

} // namespace exec
} // namespace overlap

#endif // OVERLAP_LOADER_RUNOPTIONS_H

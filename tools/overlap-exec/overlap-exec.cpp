//===- overlap-exec.cpp - Run compiled programs without MLIR ----*- C++ -*-===//
//
// Runs shared libraries from `overlap-compile --emit=so` where neither MLIR
// nor LLVM is installed: it reads the entry signature the compiler embedded
// (overlap_entry_signature), makes the same seeded inputs as overlap-run,
// calls the entry's C interface on host ranks (threads) or on one CUDA
// device, and compares every output of every rank with a reference library
// (the same program compiled with --strategy=none), printing overlap-run's
// report. The reference runs on the program's backend, or on the other one
// (--ref-backend): a program compiled for CUDA against the same program
// compiled for the host, whose result does not share the CUDA lowering.
// Without a reference it prints a checksum per output and the run's time.
// --inputs and --outputs read the inputs from, and write the outputs to,
// NumPy .npz files (lib/Loader/Npz.cpp). Under mpirun (`mpirun -np R
// overlap-exec ...`) each process runs one host rank, rank 0 prints the
// report, and every process exits with the same status
// (lib/Loader/ProcessRun.cpp).
//
// Exit status: 0 when every output matches (or, without --ref, the run
// succeeded), 1 on a mismatch, 2 on a usage, load, signature or runtime
// error, 3 when --backend cuda cannot run here (no device, or no CUDA
// backend in this build).
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/RunOptions.h"
#include "overlap/Loader/Session.h"
#include "overlap/Support/Flags.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace overlap;

static constexpr const char *kTool = "overlap-exec";

static const char *const kSynopsis =
    "usage: overlap-exec PROGRAM.so [--ref REF.so] [options]\n";

static const char *const kAbout =
    "\nRuns PROGRAM.so (from overlap-compile --emit=so) with seeded inputs on\n"
    "R ranks and compares every output of every rank with REF.so (the same\n"
    "program compiled with --strategy=none); without --ref, prints a\n"
    "checksum per output. The options are the rows of\n"
    "include/overlap/Loader/RunOptions.def; docs/tools.md describes it.\n\n";

/// overlap-exec's defaults: the table's, but a launcher's processes are its
/// ranks (auto).
static exec::SessionOptions defaults() {
  exec::SessionOptions o;
  o.ranksAs = exec::RanksAs::Auto;
  return o;
}

/// The flags: every row of RunOptions.def.
static flags::Args runFlags() {
  flags::Args args;
  for (const exec::RunOption &row : exec::runOptions())
    args.add({exec::flagSpelling(row),
              row.kind == exec::RunKind::Bool ? "" : row.meta,
              exec::helpText(row, defaults())});
  return args;
}

/// Parses the command line into `o`; on a usage error returns false with
/// `message`.
static bool parseOptions(int argc, char **argv, flags::Args &args,
                         exec::SessionOptions &o, std::string &message) {
  if (!args.parse(argc, argv, 1, /*positionals=*/true)) {
    message = args.error();
    return false;
  }
  if (args.helpAsked())
    return true;
  for (const auto &[flag, value] : args.given()) {
    const exec::RunOption *row =
        exec::findRunOption(flag.substr(flag.find_first_not_of('-')));
    message = exec::setRunOption(o, *row, value);
    if (!message.empty())
      return false;
  }
  const std::vector<std::string> &positional = args.positionals();
  if (positional.size() != 1) {
    message = positional.empty() ? "no program library given"
                                 : "one program library, not " +
                                       std::to_string(positional.size());
    return false;
  }
  o.program = positional.front();
  if (!o.refBackend.empty() && o.reference.empty()) {
    message = "--ref-backend " + o.refBackend +
              " without --ref: there is no reference to run";
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  exec::SessionOptions o = defaults();
  flags::Args args = runFlags();
  std::string message;
  if (!parseOptions(argc, argv, args, o, message)) {
    std::fprintf(stderr,
                 "%s: error: %s\n%s(overlap-exec --help: the options)\n", kTool,
                 message.c_str(), kSynopsis);
    return 2;
  }
  if (args.helpAsked()) {
    std::printf("%s%s%s", kSynopsis, kAbout, args.help().c_str());
    return 0;
  }

  exec::SessionOutput output;
  output.out = [](const std::string &text) {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  };
  output.err = [](const std::string &text) {
    std::fputs(text.c_str(), stderr);
  };
  return exec::runSession(o, output);
}

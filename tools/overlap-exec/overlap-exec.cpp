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

#include "overlap/Loader/Compare.h"
#include "overlap/Loader/ElfImports.h"
#include "overlap/Loader/Executor.h"
#include "overlap/Loader/Run.h"
#include "overlap/Loader/Session.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace overlap;

static constexpr const char *kTool = "overlap-exec";

static const char *const kUsage =
    "usage: overlap-exec PROGRAM.so [--ref REF.so] [--ranks R] [--seed S]\n"
    "                    [--rtol X] [--atol Y] [--backend host|cuda]\n"
    "                    [--ref-backend host|cuda] [--device N] [--iters N]\n"
    "                    [--wait-timeout-ms MS]\n"
    "                    [--ranks-as auto|threads|processes]\n"
    "                    [--chaos SEED] [--chaos-max-us US]\n"
    "                    [--inputs IN.npz] [--outputs OUT.npz] [-v]\n"
    "\n"
    "Runs PROGRAM.so (from overlap-compile --emit=so) with seeded inputs on\n"
    "R ranks and compares every output of every rank with REF.so (the same\n"
    "program compiled with --strategy=none); without --ref, prints a\n"
    "checksum per output. docs/tools.md describes it.\n"
    "\n"
    "  --ref REF.so         reference library (same signature)\n"
    "  --ranks R            ranks (default: the size of the program's grid)\n"
    "  --ranks-as M         host ranks as threads of this process, or as\n"
    "                       processes of the MPI job that started it, one\n"
    "                       rank each (mpirun -np R overlap-exec ...); auto\n"
    "                       (default): processes under mpirun\n"
    "  --seed S             seed of the inputs (default 1)\n"
    "  --inputs IN.npz      the inputs instead of seeded ones (np.savez or\n"
    "                       np.savez_compressed): one array per argument,\n"
    "                       named as in the signature (arg0, arg1, ...), of\n"
    "                       shape [R, *shape] (row r for rank r) or the\n"
    "                       argument's shape (every rank the same); dtype\n"
    "                       '<f4' for f32, '<f2' for f16, and for bf16 a\n"
    "                       2-byte one of the bit patterns ('<u2', '<i2',\n"
    "                       '<V2' as ml_dtypes.bfloat16, '|V2'); C order\n"
    "  --outputs OUT.npz    write the program's outputs after the run:\n"
    "                       result0, ..., then arg0, ... (as in the\n"
    "                       signature), each of shape [R, *shape], dtype\n"
    "                       '<f4', '<f2', or '<u2' holding bf16 bit patterns\n"
    "                       (view them as ml_dtypes.bfloat16); uncompressed\n"
    "  --rtol X, --atol Y   tolerance (default 0: exact)\n"
    "  --backend B          host (ranks are threads) or cuda (one rank on a\n"
    "                       device); default: the program's target\n"
    "  --ref-backend B      the reference's backend (default: --backend);\n"
    "                       each library's target must be its backend\n"
    "  --device N           CUDA device (default 0)\n"
    "  --iters N            run each library N times; report the median time\n"
    "  --wait-timeout-ms MS timeout of waits and collectives (0: default)\n"
    "  --chaos SEED         host chaos mode (random delays before streams)\n"
    "  --chaos-max-us US    longest chaos delay (0: the runtime's default)\n"
    "  -v                   say which allocator imports were poisoned\n";

using Options = exec::SessionOptions;

static bool parseInteger(const std::string &text, int64_t low, int64_t high,
                         int64_t &value) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (errno || *end || parsed < low || parsed > high)
    return false;
  value = parsed;
  return true;
}

static bool parseUnsigned(const std::string &text, uint64_t &value) {
  if (text.empty() || text[0] == '-')
    return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long parsed = std::strtoull(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  value = parsed;
  return true;
}

/// A number; whether it is a valid tolerance is run::checkTolerance's to
/// say.
static bool parseTolerance(const std::string &text, double &value) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !errno && !*end;
}

/// Parses the command line; on a usage error returns false with `message`.
static bool parseOptions(int argc, char **argv, Options &o,
                         std::string &message, bool &help) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help = true;
      return true;
    }
    if (arg == "-v") {
      o.verbose = true;
      continue;
    }
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0) {
      if (!arg.empty() && arg[0] == '-') {
        message = "unknown option '" + arg + "'";
        return false;
      }
      positional.push_back(arg);
      continue;
    }
    // --name=value or --name value.
    std::string name = arg, value;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      message = "option '" + name + "' needs a value";
      return false;
    }
    int64_t number = 0;
    auto bad = [&](const char *expected) {
      message = name + " '" + value + "': expected " + expected;
      return false;
    };
    if (name == "--ref") {
      o.reference = value;
    } else if (name == "--inputs" || name == "--outputs") {
      if (value.empty())
        return bad("a .npz file");
      (name == "--inputs" ? o.inputsNpz : o.outputsNpz) = value;
    } else if (name == "--ranks") {
      if (!parseInteger(value, 1, 1024, number))
        return bad("1 to 1024 ranks");
      o.ranks = static_cast<int>(number);
    } else if (name == "--ranks-as") {
      if (!exec::parseRanksAs(value, o.ranksAs))
        return bad("auto, threads or processes");
    } else if (name == "--seed") {
      if (!parseUnsigned(value, o.seed))
        return bad("an unsigned seed");
    } else if (name == "--rtol") {
      if (!parseTolerance(value, o.tolerance.rtol))
        return bad("a number");
    } else if (name == "--atol") {
      if (!parseTolerance(value, o.tolerance.atol))
        return bad("a number");
    } else if (name == "--backend" || name == "--ref-backend") {
      if (value != "host" && value != "cuda")
        return bad("host or cuda");
      (name == "--backend" ? o.backend : o.refBackend) = value;
    } else if (name == "--device") {
      if (!parseInteger(value, 0, 1023, number))
        return bad("a device index");
      o.device = static_cast<int>(number);
    } else if (name == "--iters") {
      if (!parseInteger(value, 1, 1000000, number))
        return bad("1 or more iterations");
      o.iterations = static_cast<int>(number);
    } else if (name == "--wait-timeout-ms") {
      if (!parseInteger(value, 0, INT64_MAX, number))
        return bad("milliseconds >= 0");
      o.waitTimeoutMs = number;
    } else if (name == "--chaos") {
      uint64_t chaosSeed;
      if (!parseUnsigned(value, chaosSeed))
        return bad("an unsigned seed");
      o.chaos = chaosSeed;
    } else if (name == "--chaos-max-us") {
      if (!parseInteger(value, 0, INT64_MAX, number))
        return bad("microseconds >= 0");
      o.chaosMaxUs = number;
    } else {
      message = "unknown option '" + name + "'";
      return false;
    }
  }
  if (positional.size() != 1) {
    message = positional.empty() ? "no program library given"
                                 : "one program library, not " +
                                       std::to_string(positional.size());
    return false;
  }
  o.program = positional.front();
  if (!run::checkTolerance(o.tolerance, message))
    return false;
  if (!run::checkTimeFlags(o.waitTimeoutMs, o.chaosMaxUs, message))
    return false;
  if (!o.refBackend.empty() && o.reference.empty()) {
    message = "--ref-backend " + o.refBackend +
              " without --ref: there is no reference to run";
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  Options o;
  o.ranksAs = exec::RanksAs::Auto;
  std::string message;
  bool help = false;
  if (!parseOptions(argc, argv, o, message, help)) {
    std::fprintf(stderr, "%s: error: %s\n%s", kTool, message.c_str(), kUsage);
    return 2;
  }
  if (help) {
    std::fputs(kUsage, stdout);
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

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
//
// Exit status: 0 when every output matches (or, without --ref, the run
// succeeded), 1 on a mismatch, 2 on a usage, load, signature or runtime
// error, 3 when --backend cuda cannot run here (no device, or no CUDA
// backend in this build).
//
//===----------------------------------------------------------------------===//

#include "ElfImports.h"
#include "Executor.h"
#include "RunSupport.h"

#include "overlap/Runtime/overlap_runtime.h"

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
    "                    [--chaos SEED] [--chaos-max-us US] [-v]\n"
    "\n"
    "Runs PROGRAM.so (from overlap-compile --emit=so) with seeded inputs on\n"
    "R ranks and compares every output of every rank with REF.so (the same\n"
    "program compiled with --strategy=none); without --ref, prints a\n"
    "checksum per output. docs/tools.md describes it.\n"
    "\n"
    "  --ref REF.so         reference library (same signature)\n"
    "  --ranks R            ranks (default: the size of the program's grid)\n"
    "  --seed S             seed of the inputs (default 1)\n"
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

namespace {
struct Options {
  std::string program;
  std::string reference;
  int ranks = 0;
  uint64_t seed = 1;
  run::Tolerance tolerance;
  std::string backend;
  std::string refBackend;
  int device = 0;
  int iterations = 1;
  int64_t waitTimeoutMs = 0;
  std::optional<uint64_t> chaos;
  int64_t chaosMaxUs = 0;
  bool verbose = false;
};
} // namespace

static int error(const std::string &message) {
  std::fprintf(stderr, "%s: error: %s\n", kTool, message.c_str());
  return 2;
}

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

static bool parseTolerance(const std::string &text, double &value) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !errno && !*end && value >= 0;
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
    } else if (name == "--ranks") {
      if (!parseInteger(value, 1, 1024, number))
        return bad("1 to 1024 ranks");
      o.ranks = static_cast<int>(number);
    } else if (name == "--seed") {
      if (!parseUnsigned(value, o.seed))
        return bad("an unsigned seed");
    } else if (name == "--rtol") {
      if (!parseTolerance(value, o.tolerance.rtol))
        return bad("a tolerance >= 0");
    } else if (name == "--atol") {
      if (!parseTolerance(value, o.tolerance.atol))
        return bad("a tolerance >= 0");
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
  if (!run::checkTimeFlags(o.waitTimeoutMs, o.chaosMaxUs, message))
    return false;
  if (!o.refBackend.empty() && o.reference.empty()) {
    message = "--ref-backend " + o.refBackend +
              " without --ref: there is no reference to run";
    return false;
  }
  return true;
}

/// A program names liboverlap_runtime.so or liboverlap_runtime_cuda.so with
/// an absolute rpath into the build that compiled it. The dynamic loader
/// reuses a library already loaded under the same name, so loading both
/// runtimes that sit next to the one this tool links (first, so that their
/// symbols come after its own in the global scope) lets programs run from a
/// build directory carried to another machine.
static void preloadRuntimes() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&overlap_host_launch), &info) ||
      !info.dli_fname)
    return;
  std::string dir = info.dli_fname;
  size_t slash = dir.rfind('/');
  dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  for (const char *name :
       {"liboverlap_runtime.so", "liboverlap_runtime_cuda.so"}) {
    std::string path = dir + "/" + name;
    struct stat file;
    if (stat(path.c_str(), &file) == 0)
      (void)dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
}

/// dlopens `path` and reads its signature and entry point.
static bool loadLibrary(const std::string &path, exec::Library &lib,
                        std::string &message) {
  lib.path = path;
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    message = "cannot load " + path + ": " + std::strerror(errno);
    return false;
  }
  // A name without a slash would be looked up in the library path.
  std::string openPath =
      path.find('/') == std::string::npos ? "./" + path : path;
  lib.handle = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) {
    message = "cannot load " + path + ": " + dlerror();
    return false;
  }
  auto *text =
      static_cast<const char *>(dlsym(lib.handle, run::kSignatureSymbol));
  if (!text) {
    message = path + " has no " + std::string(run::kSignatureSymbol) +
              ": it was not made by overlap-compile --emit=so, or the "
              "compiler could not describe its entry (see its warning)";
    return false;
  }
  std::string why;
  if (!run::parseSignature(text, lib.sig, why)) {
    message =
        path + ": malformed " + std::string(run::kSignatureSymbol) + ", " + why;
    return false;
  }
  lib.entry = dlsym(lib.handle, lib.sig.symbol.c_str());
  if (!lib.entry) {
    message = path + " has no symbol " + lib.sig.symbol +
              ", which its signature names";
    return false;
  }
  size_t values = (lib.sig.results.empty() ? 0 : 1) + 1 + lib.sig.args.size();
  if (values > exec::kMaxEntryValues) {
    message = path + ": @" + lib.sig.name + " takes " +
              std::to_string(lib.sig.args.size()) + " arguments; " + kTool +
              " calls entries of up to " +
              std::to_string(exec::kMaxEntryValues - 2);
    return false;
  }
  return true;
}

/// Points the program's allocator imports at the poisoning versions.
static void poison(exec::Library &lib, const exec::Executor &executor,
                   bool verbose) {
  std::vector<exec::ImportRedirect> redirects = executor.poisonedImports();
  std::string why;
  if (!exec::redirectImports(lib.handle, redirects, why)) {
    std::fprintf(stderr, "%s: warning: %s: allocations are not poisoned: %s\n",
                 kTool, lib.path.c_str(), why.c_str());
    return;
  }
  if (!verbose)
    return;
  std::string list;
  for (const exec::ImportRedirect &redirect : redirects)
    list += std::string(list.empty() ? "" : ", ") + redirect.name + " " +
            std::to_string(redirect.slots);
  std::fprintf(stderr, "%s: %s: poisoned import slots: %s\n", kTool,
               lib.path.c_str(), list.c_str());
}

/// "program.so (strategy uniform:4)".
static std::string describe(const exec::Library &lib) {
  return lib.path + (lib.sig.strategy.empty()
                         ? ""
                         : " (strategy " + lib.sig.strategy + ")");
}

static std::string millis(const exec::Outcome &outcome) {
  return run::formatDouble("%.3f", run::median(outcome.iterationMs)) + " ms";
}

/// "cuda run: program 1.234 ms, reference 2.345 ms (...)": `runs` timed on
/// `executor`.
static std::string timingLine(const exec::Executor &executor,
                              const std::string &runs, int iterations) {
  bool cuda = std::string(executor.backend()) == "cuda";
  return std::string(executor.backend()) + " run: " + runs + " (" +
         (iterations > 1 ? "median of " + std::to_string(iterations) + " runs, "
                         : std::string()) +
         (cuda ? "wall clock of the entry call and the synchronize after it)"
               : "wall clock of the entry call on the slowest rank; threads "
                 "on this CPU, not a performance measure)") +
         "\n";
}

/// Makes the executor of `backend` for `ranks` ranks of `sig`; `option`
/// (--backend, --ref-backend) names the choice in messages. Returns 0, or
/// the exit status after printing why not: 2, or 3 without a CUDA device.
static int createExecutor(const std::string &backend, const char *option,
                          const Options &o, const run::Signature &sig,
                          int ranks,
                          std::unique_ptr<exec::Executor> &executor) {
  if (backend == "cuda") {
    if (ranks != 1)
      return error(std::string(option) +
                   " cuda runs one rank per process "
                   "(overlap_cuda_context_create_single), but @" +
                   sig.name + " needs " + std::to_string(ranks) + " ranks");
    bool noDevice = false;
    std::string message;
    executor =
        exec::createCudaExecutor(o.device, o.waitTimeoutMs, noDevice, message);
    if (executor)
      return 0;
    if (!noDevice)
      return error(message);
    std::fprintf(stderr, "%s: %s; %s cuda needs one\n", kTool, message.c_str(),
                 option);
    return 3;
  }
  overlap_host_options options;
  overlap_host_options_init(&options);
  options.wait_timeout_ms = o.waitTimeoutMs;
  options.chaos_max_delay_us = o.chaosMaxUs;
  if (o.chaos) {
    options.chaos = OVERLAP_CHAOS_ON;
    options.chaos_seed = *o.chaos;
  }
  executor = exec::createHostExecutor(ranks, options);
  return 0;
}

int main(int argc, char **argv) {
  Options o;
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

  preloadRuntimes();
  exec::Library program, reference;
  bool haveReference = !o.reference.empty();
  if (!loadLibrary(o.program, program, message) ||
      (haveReference && !loadLibrary(o.reference, reference, message)))
    return error(message);
  const run::Signature &sig = program.sig;
  std::string backend = o.backend.empty() ? sig.target : o.backend;
  std::string refBackend = o.refBackend.empty() ? backend : o.refBackend;
  bool sameBackend = refBackend == backend;
  if (haveReference) {
    // On two backends each library is checked against its own below.
    std::string diff =
        run::signatureDifference(sig, reference.sig, sameBackend);
    if (!diff.empty()) {
      if (o.refBackend.empty() && reference.sig.target != refBackend)
        diff += " (--ref-backend " + reference.sig.target +
                " runs the reference on the backend it was compiled for)";
      return error(o.program + " and " + o.reference +
                   " have different signatures: " + diff);
    }
  }

  if (backend != sig.target)
    return error(o.program + " was compiled for --target=" + sig.target +
                 "; --backend " + backend +
                 " runs programs compiled with --target=" + backend);
  if (haveReference && refBackend != reference.sig.target)
    return error(o.reference + " was compiled for --target=" +
                 reference.sig.target + "; --ref-backend " + refBackend +
                 " runs references compiled with --target=" + refBackend);
  int ranks = o.ranks ? o.ranks : run::defaultRanks(sig);
  if (!run::checkRanks(sig, ranks, message))
    return error(message);
  if (backend == "cuda" && o.chaos)
    return error("--chaos is a mode of the host backend");

  // One executor when both libraries run on the same backend; the
  // reference's own otherwise (CudaExecutor is one per process).
  std::unique_ptr<exec::Executor> executor, ownRefExecutor;
  if (int status =
          createExecutor(backend, "--backend", o, sig, ranks, executor))
    return status;
  if (haveReference && !sameBackend)
    if (int status = createExecutor(refBackend, "--ref-backend", o,
                                    reference.sig, ranks, ownRefExecutor))
      return status;
  exec::Executor &refExecutor = ownRefExecutor ? *ownRefExecutor : *executor;
  poison(program, *executor, o.verbose);
  if (haveReference)
    poison(reference, refExecutor, o.verbose);

  std::printf("%s: @%s on %s, program %s", kTool, sig.name.c_str(),
              executor->where().c_str(), describe(program).c_str());
  if (haveReference)
    std::printf(" vs reference %s", describe(reference).c_str());
  if (ownRefExecutor)
    std::printf(" on %s", ownRefExecutor->where().c_str());
  std::printf(", seed %" PRIu64, o.seed);
  if (o.chaos)
    std::printf(", chaos %" PRIu64, *o.chaos);
  if (o.iterations > 1)
    std::printf(", %d iterations", o.iterations);
  std::printf("\n");
  std::fflush(stdout);

  exec::Outcome programOutcome, referenceOutcome;
  if (!executor->execute(program, o.seed, o.iterations, programOutcome,
                         message))
    return error("the program run failed: " + message);
  if (haveReference && !refExecutor.execute(reference, o.seed, o.iterations,
                                            referenceOutcome, message))
    return error("the reference run failed: " + message);

  std::string programRuns = "program " + millis(programOutcome);
  std::string timing;
  if (!haveReference)
    timing = timingLine(*executor, programRuns, o.iterations);
  else if (sameBackend)
    timing = timingLine(*executor,
                        programRuns + ", reference " + millis(referenceOutcome),
                        o.iterations);
  else
    timing = timingLine(*executor, programRuns, o.iterations) +
             timingLine(refExecutor, "reference " + millis(referenceOutcome),
                        o.iterations);

  int status = 0;
  if (haveReference) {
    run::Comparison comparison = run::compareOutputs(
        sig, programOutcome.outputs, referenceOutcome.outputs, o.tolerance,
        "program", "reference");
    std::fputs(comparison.text.c_str(), stdout);
    std::fputs(timing.c_str(), stdout);
    std::fputs(run::verdict(comparison).c_str(), stdout);
    status = comparison.ok ? 0 : 1;
  } else {
    std::fputs(run::checksums(sig, programOutcome.outputs).c_str(), stdout);
    std::fputs(timing.c_str(), stdout);
  }
  executor->release(program, programOutcome);
  if (haveReference)
    refExecutor.release(reference, referenceOutcome);
  return status;
}

//===- Session.cpp - What overlap-exec does with its options ----*- C++ -*-===//
//
// Load a program (and a reference), check their signatures and backends,
// make the executors, poison the allocations, run, compare, report. Shared
// by overlap-exec and the C API's overlapRun (overlap-c/Loader.h).
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/Session.h"
#include "overlap/Loader/Npz.h"

#include "overlap/Runtime/overlap_runtime.h"

#include <cinttypes>
#include <memory>
#include <string>
#include <vector>

using namespace overlap;
using namespace overlap::exec;

namespace {
/// One run of runSession.
class Session {
public:
  Session(const SessionOptions &o, const SessionOutput &output)
      : o(o), output(output) {}
  int run();

private:
  std::string tool() const { return o.tool; }
  void out(const std::string &text) const {
    if (output.out)
      output.out(text);
  }
  void err(const std::string &text) const {
    if (output.err)
      output.err(text);
  }
  int error(const std::string &message) const {
    err(tool() + ": error: " + message + "\n");
    return 2;
  }
  void poison(Library &lib, const Executor &executor);
  int createExecutor(const std::string &backend, const char *option,
                     const run::Signature &sig, int ranks,
                     std::unique_ptr<Executor> &executor);

  const SessionOptions &o;
  const SessionOutput &output;
};
} // namespace

/// Points the program's allocator imports at the poisoning versions.
void Session::poison(Library &lib, const Executor &executor) {
  std::vector<ImportRedirect> redirects = executor.poisonedImports();
  std::string why;
  if (!redirectImports(lib.handle, redirects, why)) {
    err(tool() + ": warning: " + lib.path +
        ": allocations are not poisoned: " + why + "\n");
    return;
  }
  if (!o.verbose)
    return;
  std::string list;
  for (const ImportRedirect &redirect : redirects)
    list += std::string(list.empty() ? "" : ", ") + redirect.name + " " +
            std::to_string(redirect.slots);
  err(tool() + ": " + lib.path + ": poisoned import slots: " + list + "\n");
}

/// "program.so (strategy uniform:4)".
static std::string describe(const Library &lib) {
  return lib.path + (lib.sig.strategy.empty()
                         ? ""
                         : " (strategy " + lib.sig.strategy + ")");
}

static std::string millis(const Outcome &outcome) {
  return run::formatDouble("%.3f", run::median(outcome.iterationMs)) + " ms";
}

/// "cuda run: program 1.234 ms, reference 2.345 ms (...)": `runs` timed on
/// `executor`.
static std::string timingLine(const Executor &executor,
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
int Session::createExecutor(const std::string &backend, const char *option,
                            const run::Signature &sig, int ranks,
                            std::unique_ptr<Executor> &executor) {
  if (backend == "cuda") {
    if (ranks != 1)
      return error(std::string(option) +
                   " cuda runs one rank per process "
                   "(overlap_cuda_context_create_single), but @" +
                   sig.name + " needs " + std::to_string(ranks) + " ranks");
    bool noDevice = false;
    std::string message;
    executor =
        createCudaExecutor(o.device, o.waitTimeoutMs, noDevice, message);
    if (executor)
      return 0;
    if (!noDevice)
      return error(message);
    err(tool() + ": " + message + "; " + option + " cuda needs one\n");
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
  executor = createHostExecutor(ranks, options);
  return 0;
}

int Session::run() {
  std::string message;
  preloadRuntimes();
  Library program, reference;
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
  if (o.inputs && !o.inputsNpz.empty())
    return error("given inputs and an .npz of inputs (" + o.inputsNpz +
                 "): one or the other");
  npz::Inputs fromFile;
  const run::GivenInputs *given = o.inputs;
  if (!o.inputsNpz.empty()) {
    if (!npz::readInputs(o.inputsNpz, sig, ranks, fromFile, message))
      return error(message);
    given = &fromFile.given;
  }
  if (given && !run::checkGivenInputs(sig, *given, ranks, message))
    return error("the inputs do not fit @" + sig.name + ": " + message);

  // One executor when both libraries run on the same backend; the
  // reference's own otherwise (CudaExecutor is one per process).
  std::unique_ptr<Executor> executor, ownRefExecutor;
  if (int status =
          createExecutor(backend, "--backend", sig, ranks, executor))
    return status;
  if (haveReference && !sameBackend)
    if (int status = createExecutor(refBackend, "--ref-backend",
                                    reference.sig, ranks, ownRefExecutor))
      return status;
  Executor &refExecutor = ownRefExecutor ? *ownRefExecutor : *executor;
  poison(program, *executor);
  if (haveReference)
    poison(reference, refExecutor);

  std::string header = tool() + ": @" + sig.name + " on " +
                       executor->where() + ", program " + describe(program);
  if (haveReference)
    header += " vs reference " + describe(reference);
  if (ownRefExecutor)
    header += " on " + ownRefExecutor->where();
  header += !o.inputsNpz.empty() ? ", inputs " + o.inputsNpz
            : o.inputs           ? std::string(", given inputs")
                                 : ", seed " + std::to_string(o.seed);
  if (o.chaos)
    header += ", chaos " + std::to_string(*o.chaos);
  if (o.iterations > 1)
    header += ", " + std::to_string(o.iterations) + " iterations";
  out(header + "\n");

  Outcome programOutcome, referenceOutcome;
  programOutcome.run.given = given;
  referenceOutcome.run.given = given;
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

  if (output.outputs)
    output.outputs(sig, programOutcome.outputs);
  if (!o.outputsNpz.empty() &&
      !npz::writeOutputs(o.outputsNpz, sig, programOutcome.outputs, message)) {
    executor->release(program, programOutcome);
    if (haveReference)
      refExecutor.release(reference, referenceOutcome);
    return error(message);
  }
  int status = 0;
  if (haveReference) {
    run::Comparison comparison = run::compareOutputs(
        sig, programOutcome.outputs, referenceOutcome.outputs, o.tolerance,
        "program", "reference", o.seed);
    out(comparison.text + timing + run::verdict(comparison));
    status = comparison.ok ? 0 : 1;
  } else {
    out(run::checksums(sig, programOutcome.outputs) + timing);
  }
  executor->release(program, programOutcome);
  if (haveReference)
    refExecutor.release(reference, referenceOutcome);
  return status;
}

int overlap::exec::runSession(const SessionOptions &options,
                              const SessionOutput &output) {
  return Session(options, output).run();
}

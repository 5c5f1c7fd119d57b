//===- Session.cpp - What overlap-exec does with its options ----*- C++ -*-===//
//
// Load a program (and a reference), check their signatures and backends,
// make the executors, poison the allocations, run, compare, report. Shared
// by overlap-exec and the C API's overlapRun (overlap-c/Loader.h).
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/Session.h"
#include "overlap/Loader/Npz.h"
#include "overlap/Loader/RuntimeApi.h"
#include "overlap/Loader/SessionAgreement.h"
#include "overlap/Runtime/Launchers.h"

#include "overlap/Runtime/overlap_runtime.h"
#include "overlap/Runtime/overlap_runtime_process.h"

#include <algorithm>
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
  /// The session on this process's ranks: all of them (threads), or its
  /// own (processes).
  int runRanks();
  /// runRanks, with a failed allocation of the loader's (an output's copy
  /// of a size the program returned) an error that says which, not an
  /// uncaught std::bad_alloc.
  int runRanksGuarded() {
    try {
      return runRanks();
    } catch (const run::OutOfMemory &e) {
      return error(e.what());
    } catch (const std::bad_alloc &) {
      return error("out of memory in the loader (std::bad_alloc) while it "
                   "ran " + o.program);
    }
  }
  std::string tool() const { return o.tool; }
  /// As processes, only rank 0 reports (and warns); no one does when the
  /// caller takes no report.
  bool reporting() const { return output.out && rank_ == 0; }
  void out(const std::string &text) const {
    if (reporting())
      output.out(text);
  }
  void err(const std::string &text) const {
    if (output.err && rank_ == 0)
      output.err(text);
  }
  /// As processes, errors are kept for finishProcesses, which has rank 0
  /// print every rank's.
  int error(const std::string &message) {
    if (processes_) {
      errors_.push_back(message);
      return 2;
    }
    err(tool() + ": error: " + message + "\n");
    return 2;
  }
  /// A run that failed: `message` is empty on the ranks of a process run
  /// whose rank 0 has the reason.
  int runFailed(const char *what, const std::string &message) {
    return message.empty() ? 2 : error(std::string(what) + message);
  }
  /// As processes: the first point every process reaches before anything
  /// collective; nonzero when any process failed before it.
  int agreeBeforeRunning(int status);
  void poison(const Library &lib, const Executor &executor);
  int createExecutor(const std::string &backend, const char *option,
                     const run::Signature &sig, int ranks,
                     std::unique_ptr<Executor> &executor);

  const SessionOptions &o;
  const SessionOutput &output;
  bool processes_ = false;
  /// The launcher that started this job's processes ("Open MPI",
  /// "torchrun"), "" with --ranks-as processes and none.
  std::string launcher_;
  int rank_ = 0, size_ = 1;
  bool agreed_ = false;
  std::vector<std::string> errors_;
  /// This process's session (SessionFacts::text) once it is ready to run;
  /// empty while it is not (then it is not compared).
  std::string facts_;
};
} // namespace

int Session::agreeBeforeRunning(int status) {
  agreed_ = true;
  std::string why;
  // Rank 0 compares every process's session: options that differ between
  // processes are an error naming them and the ranks, before anything
  // collective could wait for a call that a process never makes.
  std::vector<std::string> all;
  if (!gatherStrings(size_, status == 0 ? facts_ : std::string(), all, why)) {
    errors_.push_back(why);
    status = 2;
  } else if (rank_ == 0) {
    std::string differs = describeDisagreement(all);
    if (!differs.empty()) {
      errors_.push_back("the processes of the job were started with "
                        "different options (each must run the same "
                        "session):\n" +
                        differs);
      status = 2;
    }
  }
  int agreed = agreeOnStatus(status, why);
  if (!why.empty())
    errors_.push_back(why);
  return agreed;
}

/// Points the program's allocator imports at the poisoning versions.
void Session::poison(const Library &lib, const Executor &executor) {
  // A program without a handle is the caller's (a JIT's), which registered
  // the poisoning allocators itself.
  if (!lib.handle)
    return;
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

/// ", speedup 1.23x (reference / program)" when both ran on one backend:
/// the reference's time over the program's.
static std::string speedup(const Outcome &program, const Outcome &reference) {
  double p = run::median(program.iterationMs);
  double r = run::median(reference.iterationMs);
  if (!(p > 0) || !(r > 0))
    return "";
  return ", speedup " + run::formatDouble("%.2f", r / p) +
         "x (reference / program)";
}

/// "cuda run: program 1.234 ms, reference 2.345 ms (...)": `runs` timed on
/// `executor`, whose host ranks are `processes` or threads.
static std::string timingLine(const Executor &executor, const std::string &runs,
                              int iterations, bool processes) {
  bool cuda = std::string(executor.backend()) == "cuda";
  return std::string(executor.backend()) + " run: " + runs + " (" +
         (iterations > 1 ? "median of " + std::to_string(iterations) +
                               " runs, not poisoned (then one poisoned run, "
                               "compared), "
                         : std::string()) +
         (cuda ? "wall clock of the entry call and the synchronize after it)"
               : std::string("wall clock of the entry call on the slowest "
                             "rank; ") +
                     (processes ? "processes" : "threads") +
                     " on this CPU, not a performance measure)") +
         "\n";
}

/// Makes the executor of `backend` for `ranks` ranks of `sig`; `option`
/// (--backend, --ref-backend) names the choice in messages. Returns 0, or
/// the exit status after printing why not: 2, or 3 without a CUDA device.
int Session::createExecutor(const std::string &backend, const char *option,
                            const run::Signature &sig, int ranks,
                            std::unique_ptr<Executor> &executor) {
  if (backend == "cuda") {
    if (ranks != 1 && !processes_)
      return error(std::string(option) + " cuda runs one rank per process " +
                   "and GPU, but @" + sig.name + " needs " +
                   std::to_string(ranks) +
                   " ranks: start one process per rank, e.g. " +
                   bootstrap::startCommand("", ranks) +
                   " overlap-exec --backend cuda PROGRAM.so (or " +
                   bootstrap::otherStartCommands(ranks) + "; docs/gpu.md)");
    bool noDevice = false;
    std::string message;
    executor =
        processes_
            ? createCudaProcessExecutor(rank_, size_, o.waitTimeoutMs, noDevice,
                                        message)
            : createCudaExecutor(o.device, o.waitTimeoutMs, noDevice, message);
    if (executor)
      return 0;
    if (!noDevice)
      return error(message);
    // As processes, each without a device says why (finishProcesses lists
    // them by rank once); every process exits 3.
    if (processes_) {
      if (!message.empty())
        errors_.push_back(message + "; " + option + " cuda needs one");
      return 3;
    }
    err(tool() + ": " + message + "; " + option + " cuda needs one\n");
    return 3;
  }
  overlap_host_options options;
  rt().overlap_host_options_init(&options);
  options.wait_timeout_ms = o.waitTimeoutMs;
  options.chaos_max_delay_us = o.chaosMaxUs;
  if (o.chaos) {
    options.chaos = OVERLAP_CHAOS_ON;
    options.chaos_seed = *o.chaos;
  }
  executor = processes_ ? createProcessExecutor(rank_, size_, options)
                        : createHostExecutor(ranks, options);
  return 0;
}

int Session::run() {
  // Whichever front end set them (flags, C, Python): RunOptions.def's
  // ranges and choices.
  std::string why = checkRunOptions(o);
  if (!why.empty())
    return error(why);
  if (!loadRuntime(why))
    return error(why);
  std::string launcher, malformed;
  processes_ = ranksAsProcesses(o.ranksAs, launcher, malformed);
  launcher_ = launcher;
  if (!malformed.empty())
    return error(malformed + " (--ranks-as threads ignores them and runs "
                             "every rank as a thread of this process)");
  if (!processes_)
    return runRanksGuarded();
  if (rt().overlap_process_init(&rank_, &size_) != OVERLAP_SUCCESS) {
    // No job to agree with: every process says why.
    if (output.err)
      output.err(tool() + ": error: " + rt().overlap_host_launch_error() +
                 (launcher.empty()
                      ? std::string()
                      : " (" + launcher +
                            " started this process; --ranks-as threads "
                            "runs the grid's ranks as threads in each)") +
                 "\n");
    return 2;
  }
  int status = runRanksGuarded();
  // A process that failed before the agreement makes it now, with the
  // others that reached it.
  if (!agreed_)
    status = std::max(status, agreeBeforeRunning(status));
  return finishProcesses(rank_, size_, status, errors_,
                         [this](const std::string &text) {
                           if (output.err)
                             output.err(tool() + ": error: " + text + "\n");
                         });
}

int Session::runRanks() {
  std::string message;
  // The caller's programs (a JIT's), or the libraries at the paths.
  Library loadedProgram, loadedReference;
  bool haveReference = o.referenceLibrary || !o.reference.empty();
  if (!o.programLibrary && !loadLibrary(o.program, loadedProgram, message))
    return error(message);
  if (haveReference && !o.referenceLibrary &&
      !loadLibrary(o.reference, loadedReference, message))
    return error(message);
  Library &program = o.programLibrary ? *o.programLibrary : loadedProgram;
  Library &reference =
      o.referenceLibrary ? *o.referenceLibrary : loadedReference;
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
      return error(program.path + " and " + reference.path +
                   " have different signatures: " + diff);
    }
  }

  if (backend != sig.target)
    return error(program.path + " was compiled for --target=" + sig.target +
                 "; --backend " + backend +
                 " runs programs compiled with --target=" + backend);
  if (haveReference && refBackend != reference.sig.target)
    return error(reference.path + " was compiled for --target=" +
                 reference.sig.target + "; --ref-backend " + refBackend +
                 " runs references compiled with --target=" + refBackend);
  int ranks = o.ranks ? o.ranks : run::defaultRanks(sig);
  if (processes_) {
    const std::string job = "the job has " + std::to_string(size_) +
                            " process" + (size_ == 1 ? "" : "es") +
                            " (one rank each)";
    if (o.ranks && o.ranks != size_)
      return error("--ranks " + std::to_string(o.ranks) + ", but " + job);
    ranks = size_;
    for (const run::GridSpec &grid : sig.grids)
      if (!grid.fits(ranks))
        return error(job + " but grid @" + grid.name + " of @" + sig.name +
                     (grid.isDynamic() ? " needs a multiple of " : " has ") +
                     std::to_string(grid.size()) + " devices: start as many (" +
                     bootstrap::startCommand(launcher_, grid.size()) + ")");
  }
  if (!run::checkRanks(sig, ranks, message))
    return error(message);
  // Before any buffer is made: a shape too big for the host is an error
  // naming the buffer, not a failed allocation inside a rank.
  if (!run::checkRunBytes(sig, ranks, message))
    return error(message);
  if (backend == "cuda" && o.chaos)
    return error("--chaos is a mode of the host backend");
  if (o.inputs && !o.inputsNpz.empty())
    return error("given inputs and an .npz of inputs (" + o.inputsNpz +
                 "): one or the other");
  // Dynamic sizes: the arguments' from the inputs (their shapes) or seeded
  // ones, before any buffer is made; the results' from the run below.
  bool dynamic = false;
  for (const run::BufferSpec &spec : sig.args)
    dynamic |= spec.isDynamic();
  for (const run::BufferSpec &spec : sig.results)
    dynamic |= spec.isDynamic();
  if (dynamic && (backend != "host" || refBackend != "host" || processes_))
    return error("@" + sig.name +
                 " has arguments or results of dynamic "
                 "shape, which run on host ranks as threads only (--backend "
                 "host, without mpirun)");
  // An .npz is read once: with dynamic sizes its arrays' shapes set them
  // before it is matched to the signature.
  npz::Inputs fromFile;
  if (dynamic && !o.inputsNpz.empty() &&
      !npz::readArchive(o.inputsNpz, fromFile.archive, message))
    return error(message);
  if (dynamic) {
    std::vector<std::vector<int64_t>> shapes = o.inputShapes;
    if (!o.inputsNpz.empty()) {
      shapes.assign(sig.args.size(), {});
      for (size_t i = 0; i < sig.args.size(); ++i)
        for (const npz::Array &array : fromFile.archive.arrays)
          if (array.name == sig.args[i].name) {
            // [ranks, ...shape] (a row per rank) or the shape itself.
            shapes[i] = array.shape;
            if (shapes[i].size() == sig.args[i].shape.size() + 1)
              shapes[i].erase(shapes[i].begin());
          }
    }
    for (Library *library : {&program, &reference})
      if (library == &program || haveReference)
        if (!run::resolveArgumentShapes(library->sig, ranks, shapes, message))
          return error("the inputs do not fit @" + sig.name + ": " + message);
    if (!run::checkRunBytes(sig, ranks, message))
      return error(message);
  }
  const run::GivenInputs *given = o.inputs;
  if (!o.inputsNpz.empty()) {
    bool matched =
        dynamic ? npz::matchInputs(sig, ranks, fromFile, message)
                : npz::readInputs(o.inputsNpz, sig, ranks, fromFile, message);
    if (!matched)
      return error(message);
    given = &fromFile.given;
  }
  if (given && !run::checkGivenInputs(sig, *given, ranks, message))
    return error("the inputs do not fit @" + sig.name + ": " + message);

  if (processes_) {
    SessionFacts facts;
    std::string text = artifact::formatSignature(sig);
    facts.addHashed("the program (its signature)", text.data(), text.size());
    if (haveReference) {
      text = artifact::formatSignature(reference.sig);
      facts.add("--ref", "a reference of signature " +
                             SessionFacts::hashText(text.data(), text.size()) +
                             " on " + refBackend);
    } else {
      facts.add("--ref", "none");
    }
    facts.add("--backend", backend);
    facts.add("--iters", std::to_string(o.iterations));
    if (given) {
      // Every rank's buffers, in order: each process must hold the same.
      uint64_t hash = fnv1a(nullptr, 0);
      for (const auto &rankInputs : *given)
        for (size_t i = 0; i < rankInputs.size() && i < sig.args.size(); ++i)
          hash =
              fnv1a(rankInputs[i],
                    sig.args[i].numElements() * sig.args[i].elemBytes(), hash);
      facts.addHashed("--inputs", &hash, sizeof hash);
    } else {
      facts.add("--seed", std::to_string(o.seed));
    }
    facts.add("--rtol/--atol",
              std::to_string(o.rtol) + "/" + std::to_string(o.atol));
    facts.add("--chaos", o.chaos ? std::to_string(*o.chaos) : "off");
    facts.add("--outputs", o.outputsNpz.empty() ? "none" : "given");
    facts_ = facts.text();
    if (int status = agreeBeforeRunning(0))
      return status;
  }

  // One executor when both libraries run on the same backend; the
  // reference's own otherwise (CudaExecutor is one per process).
  std::unique_ptr<Executor> executor, ownRefExecutor;
  if (int status = createExecutor(backend, "--backend", sig, ranks, executor))
    return status;
  if (haveReference && !sameBackend)
    if (int status = createExecutor(refBackend, "--ref-backend", reference.sig,
                                    ranks, ownRefExecutor))
      return status;
  Executor &refExecutor = ownRefExecutor ? *ownRefExecutor : *executor;
  poison(program, *executor);
  if (haveReference)
    poison(reference, refExecutor);
  const std::string &label = o.programLabel;
  std::string header = tool() + ": @" + sig.name + " on " + executor->where() +
                       ", " + label + " " + describe(program);
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
  if (haveReference && !ownRefExecutor) {
    // One executor: the program and its reference on the same contexts, as
    // a GPU runs them (what one leaves in a context meets the other).
    bool referenceFailed = false;
    if (!executor->executePair(program, reference, o.seed, o.iterations,
                               programOutcome, referenceOutcome,
                               referenceFailed, message))
      return runFailed(referenceFailed
                           ? "the reference run failed: "
                           : ("the " + label + " run failed: ").c_str(),
                       message);
  } else {
    if (!executor->execute(program, o.seed, o.iterations, programOutcome,
                           message))
      return runFailed(("the " + label + " run failed: ").c_str(), message);
    if (haveReference && !refExecutor.execute(reference, o.seed, o.iterations,
                                              referenceOutcome, message))
      return runFailed("the reference run failed: ", message);
  }
  // As processes, rank 0 has every rank's outputs; the others are done.
  if (rank_ != 0) {
    executor->release(program, programOutcome);
    if (haveReference)
      refExecutor.release(reference, referenceOutcome);
    return 0;
  }

  std::string programRuns = label + " " + millis(programOutcome);
  std::string timing;
  if (!haveReference)
    timing = timingLine(*executor, programRuns, o.iterations, processes_);
  else if (sameBackend)
    timing = timingLine(*executor,
                        programRuns + ", reference " +
                            millis(referenceOutcome) +
                            speedup(programOutcome, referenceOutcome),
                        o.iterations, processes_);
  else
    timing = timingLine(*executor, programRuns, o.iterations, processes_) +
             timingLine(refExecutor, "reference " + millis(referenceOutcome),
                        o.iterations, processes_);

  if (dynamic) {
    // The results' sizes: the program's, which every rank and the
    // reference must agree on.
    std::string why;
    bool ok =
        run::resolveResultShapes(program.sig, programOutcome.outputs, why);
    if (ok && haveReference) {
      ok = run::resolveResultShapes(reference.sig, referenceOutcome.outputs,
                                    why);
      std::string diff = run::signatureDifference(sig, reference.sig, false);
      if (ok && !diff.empty()) {
        ok = false;
        why = "the program and the reference return different shapes: " + diff;
      }
    }
    if (!ok) {
      executor->release(program, programOutcome);
      if (haveReference)
        refExecutor.release(reference, referenceOutcome);
      return error(why);
    }
  }
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
        sig, programOutcome.outputs, referenceOutcome.outputs, o.tolerance(),
        label.c_str(), "reference", o.seed);
    out(comparison.text + timing + run::verdict(comparison));
    status = comparison.ok ? 0 : 1;
  } else if (reporting()) {
    // The checksums read every output: not made when no one reads the
    // report (a JAX layer's step).
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

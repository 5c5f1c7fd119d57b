//===- Executor.cpp - C-interface calls and the host executor ---*- C++ -*-===//
//
// Calling an entry whose arity is known only at run time, and running it on
// ranks of the runtime's host backend with Run.
//
//===----------------------------------------------------------------------===//

#include "overlap/Loader/Executor.h"

#include <algorithm>
#include <array>
#include <utility>

namespace overlap {
namespace exec {

//===----------------------------------------------------------------------===//
// C-interface calls
//===----------------------------------------------------------------------===//

// The C interface takes only pointers (the result storage, the context, the
// argument descriptors), so a call with N values is a call through
// `void (*)(void *, ..., void *)` with N parameters: one instantiation per
// N, chosen from a table.
template <size_t... I>
static void callWith(void *fn, void *const *values, std::index_sequence<I...>) {
  using Fn = void (*)(
      std::conditional_t<true, void *, std::integral_constant<size_t, I>>...);
  reinterpret_cast<Fn>(fn)(values[I]...);
}

template <size_t N> static void callN(void *fn, void *const *values) {
  callWith(fn, values, std::make_index_sequence<N>());
}

template <size_t... N>
static constexpr auto callTable(std::index_sequence<N...>) {
  return std::array<void (*)(void *, void *const *), sizeof...(N)>{
      &callN<N>...};
}

void callCInterface(void *fn, const std::vector<void *> &values) {
  static constexpr auto table =
      callTable(std::make_index_sequence<kMaxEntryValues + 1>());
  table.at(values.size())(fn, values.data());
}

//===----------------------------------------------------------------------===//
// Timed and checked runs
//===----------------------------------------------------------------------===//

int checkedRuns(int iterations) { return iterations > 1 ? iterations + 1 : 1; }

bool isTimedRun(int run, int iterations) {
  return iterations == 1 || run < iterations;
}

//===----------------------------------------------------------------------===//
// Host executor
//===----------------------------------------------------------------------===//

bool runChecked(int iterations, const std::vector<Outcome *> &outcomes,
                const std::function<void()> &release,
                const std::function<bool(std::vector<double> &ms)> &launch) {
  const int runs = checkedRuns(iterations);
  for (int i = 0; i < runs; ++i) {
    if (i > 0)
      release();
    std::vector<double> ms(outcomes.size(), 0.0);
    run::setPoisoning(i + 1 == runs);
    bool ok = launch(ms);
    run::setPoisoning(true);
    if (!ok)
      return false;
    if (isTimedRun(i, iterations))
      for (size_t o = 0; o < outcomes.size(); ++o)
        outcomes[o]->iterationMs.push_back(ms[o]);
  }
  return true;
}

/// The slowest rank's entry call of `run`, in ms.
static double slowestCall(const run::Run &run) {
  double slowest = 0;
  for (const run::RankData &data : run.ranks)
    slowest = std::max(slowest, data.callMs);
  return slowest;
}

void bindProgram(const Library &lib, uint64_t seed, Outcome &outcome) {
  outcome.run.sig = &lib.sig;
  outcome.run.seed = seed;
  void *entry = lib.entry;
  outcome.run.call = [entry](std::vector<void *> &values) {
    callCInterface(entry, values);
  };
}

std::vector<ImportRedirect> hostPoisonedImports() {
  return {
      {"malloc", reinterpret_cast<void *>(&run::poisonedMalloc)},
      {"aligned_alloc", reinterpret_cast<void *>(&run::poisonedAlignedAlloc)},
      {"overlap_alloc", reinterpret_cast<void *>(&run::poisonedOverlapAlloc)},
      {"free", reinterpret_cast<void *>(&run::trackedFree)}};
}

namespace {
class HostExecutor : public HostRanksExecutor {
public:
  using HostRanksExecutor::HostRanksExecutor;

  bool execute(const Library &lib, uint64_t seed, int iterations,
               Outcome &outcome, std::string &error) override {
    bindProgram(lib, seed, outcome);
    if (!runChecked(
            iterations, {&outcome},
            [&] { run::freeResults(lib.sig, outcome.run); },
            [&](std::vector<double> &ms) {
              double launchMs;
              if (!run::launchOnHost(outcome.run, ranks, options, launchMs,
                                     error))
                return false;
              ms[0] = slowestCall(outcome.run);
              return true;
            }))
      return false;
    return run::collectOutputs(outcome.run, outcome.outputs, error);
  }

  void release(const Library &lib, Outcome &outcome) override {
    run::freeResults(lib.sig, outcome.run);
  }

  /// Both in one launch per run: each rank's context runs the program,
  /// then the reference (launchManyOnHost).
  bool executePair(const Library &program, const Library &reference,
                   uint64_t seed, int iterations, Outcome &programOutcome,
                   Outcome &referenceOutcome, bool &referenceFailed,
                   std::string &error) override {
    bindProgram(program, seed, programOutcome);
    bindProgram(reference, seed, referenceOutcome);
    referenceFailed = false;
    if (!runChecked(
            iterations, {&programOutcome, &referenceOutcome},
            [&] {
              run::freeResults(program.sig, programOutcome.run);
              run::freeResults(reference.sig, referenceOutcome.run);
            },
            [&](std::vector<double> &ms) {
              size_t failed = 0;
              if (!run::launchManyOnHost(
                      {&programOutcome.run, &referenceOutcome.run}, ranks,
                      options, failed, error)) {
                referenceFailed = failed == 1;
                return false;
              }
              ms = {slowestCall(programOutcome.run),
                    slowestCall(referenceOutcome.run)};
              return true;
            }))
      return false;
    if (!run::collectOutputs(programOutcome.run, programOutcome.outputs, error))
      return false;
    referenceFailed = true;
    return run::collectOutputs(referenceOutcome.run, referenceOutcome.outputs,
                               error);
  }
};
} // namespace

std::unique_ptr<Executor>
createHostExecutor(int ranks, const overlap_host_options &options) {
  return std::make_unique<HostExecutor>(ranks, options);
}

} // namespace exec
} // namespace overlap

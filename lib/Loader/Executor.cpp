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
class HostExecutor : public Executor {
public:
  HostExecutor(int ranks, const overlap_host_options &options)
      : ranks(ranks), options(options) {}

  std::string where() const override {
    return std::to_string(ranks) + " host rank" + (ranks == 1 ? "" : "s");
  }
  const char *backend() const override { return "host"; }

  std::vector<ImportRedirect> poisonedImports() const override {
    return hostPoisonedImports();
  }

  bool execute(const Library &lib, uint64_t seed, int iterations,
               Outcome &outcome, std::string &error) override {
    bindProgram(lib, seed, outcome);
    const int runs = checkedRuns(iterations);
    for (int i = 0; i < runs; ++i) {
      if (i > 0)
        run::freeResults(lib.sig, outcome.run);
      // Only the last run, whose outputs are compared, is poisoned.
      run::setPoisoning(i + 1 == runs);
      double launchMs;
      bool ok = run::launchOnHost(outcome.run, ranks, options, launchMs, error);
      run::setPoisoning(true);
      if (!ok)
        return false;
      double slowest = 0;
      for (const run::RankData &data : outcome.run.ranks)
        slowest = std::max(slowest, data.callMs);
      if (isTimedRun(i, iterations))
        outcome.iterationMs.push_back(slowest);
    }
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
    const int runs = checkedRuns(iterations);
    for (int i = 0; i < runs; ++i) {
      if (i > 0) {
        run::freeResults(program.sig, programOutcome.run);
        run::freeResults(reference.sig, referenceOutcome.run);
      }
      run::setPoisoning(i + 1 == runs);
      size_t failed = 0;
      bool ok =
          run::launchManyOnHost({&programOutcome.run, &referenceOutcome.run},
                                ranks, options, failed, error);
      run::setPoisoning(true);
      if (!ok) {
        referenceFailed = failed == 1;
        return false;
      }
      for (Outcome *outcome : {&programOutcome, &referenceOutcome}) {
        double slowest = 0;
        for (const run::RankData &data : outcome->run.ranks)
          slowest = std::max(slowest, data.callMs);
        if (isTimedRun(i, iterations))
          outcome->iterationMs.push_back(slowest);
      }
    }
    if (!run::collectOutputs(programOutcome.run, programOutcome.outputs, error))
      return false;
    referenceFailed = true;
    return run::collectOutputs(referenceOutcome.run, referenceOutcome.outputs,
                               error);
  }

private:
  int ranks;
  overlap_host_options options;
};
} // namespace

std::unique_ptr<Executor>
createHostExecutor(int ranks, const overlap_host_options &options) {
  return std::make_unique<HostExecutor>(ranks, options);
}

} // namespace exec
} // namespace overlap

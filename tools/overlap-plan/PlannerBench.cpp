//===- PlannerBench.cpp - Planning time per strategy -----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Google Benchmark of planTiles() per strategy at M = 4096 and 16384
// (N = 8192, K = 3072, f16, all-reduce over 8 ranks), on the datasheet H100
// profile (every strategy applies) and, for mc2/optimal, on the MC² seed's
// profile. Targets: optimal <= 1 ms at M = 16384, mc2 in microseconds.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Defaults.h"
#include "overlap/Planner/ChainPlanner.h"
#include "overlap/Planner/TilePlanner.h"

#include "llvm/Support/raw_ostream.h"

#include <benchmark/benchmark.h>

#include <cstdlib>

using namespace overlap::planner;

static const Profile &profileNamed(const char *name) {
  static std::map<std::string, Profile> cache;
  auto it = cache.find(name);
  if (it != cache.end())
    return it->second;
  llvm::Expected<Profile> p =
      loadProfile(shippedProfilesDir() + "/" + name + ".json");
  if (!p) {
    llvm::errs() << llvm::toString(p.takeError()) << "\n";
    std::exit(1);
  }
  return cache.emplace(name, std::move(*p)).first->second;
}

static void planBench(benchmark::State &state, const char *profile,
                      const char *strategy) {
  const Profile &p = profileNamed(profile);
  MatmulProblem pb{
      Collective::AllReduce, state.range(0), 8192, 3072, DType::F16, 8};
  size_t tiles = 0;
  for (auto _ : state) {
    llvm::Expected<Plan> plan = planTiles(p, pb, strategy);
    if (!plan) {
      state.SkipWithError(llvm::toString(plan.takeError()).c_str());
      return;
    }
    tiles = plan->tiles.size();
    benchmark::DoNotOptimize(plan->predictedUs);
  }
  state.counters["tiles"] = static_cast<double>(tiles);
}

#define PLAN_BENCH(name, profile, strategy)                                    \
  BENCHMARK_CAPTURE(planBench, name, profile, strategy)                        \
      ->Arg(4096)                                                              \
      ->Arg(16384)                                                             \
      ->Unit(benchmark::kMicrosecond)

PLAN_BENCH(none, "h100-nvlink-datasheet", "none");
PLAN_BENCH(uniform_8, "h100-nvlink-datasheet", "uniform:8");
PLAN_BENCH(mc2, "h100-nvlink-datasheet", "mc2");
PLAN_BENCH(optimal, "h100-nvlink-datasheet", "optimal");
PLAN_BENCH(waves, "h100-nvlink-datasheet", "waves");
PLAN_BENCH(ficco, "h100-nvlink-datasheet", "ficco");
PLAN_BENCH(auto, "h100-nvlink-datasheet", "auto");
PLAN_BENCH(mc2_seedprofile, "mc2-example", "mc2");
PLAN_BENCH(optimal_seedprofile, "mc2-example", "optimal");

static void chainBench(benchmark::State &state) {
  std::vector<int64_t> dims;
  for (int64_t i = 0; i <= state.range(0); ++i)
    dims.push_back(512 + (i * 7919) % 4096);
  for (auto _ : state) {
    llvm::Expected<ChainPlan> plan = planChain(dims, 65536);
    if (!plan) {
      state.SkipWithError(llvm::toString(plan.takeError()).c_str());
      return;
    }
    benchmark::DoNotOptimize(plan->totalTransfers);
  }
}
BENCHMARK(chainBench)->Arg(6)->Arg(12)->Arg(32)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();

//===- Waves.cpp - FlashOverlap wave-group search --------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Seed 001: the GEMM runs as one kernel and signals when a group of its
// output tiles is complete; the communication stream then sends that group
// with one collective call. Tiles finish in waves of (SMs - SMs taken by the
// collective); the search picks how consecutive waves are grouped, by the
// predicted makespan. All 2^(T-1) groupings are tried for up to
// kExhaustiveWaves waves; beyond that, a pruned family in which the first
// and the last group stay small (their work is exposed) and the middle is
// cut into near-equal groups.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Strategies.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace llvm;
using namespace overlap::planner;

static constexpr int64_t kExhaustiveWaves = 12;
static constexpr int64_t kMaxEdgeGroupWaves = 4;

namespace {

class WaveSearch {
public:
  WaveSearch(const CostModel &model, const WaveDetails &w)
      : model(model), w(w) {}

  /// Prices one grouping (waves per group); false if a group would get no
  /// rows once boundaries are aligned.
  bool evaluate(ArrayRef<int64_t> groups) {
    const int64_t m = model.getProblem().m;
    const int64_t align = model.getAlignment();
    rows.clear();
    compute.clear();
    comm.clear();
    int64_t cumWaves = 0, prevRows = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      cumWaves += groups[g];
      int64_t cumTiles = std::min(w.outputTiles, cumWaves * w.tilesPerWave);
      int64_t r = m;
      if (g + 1 < groups.size()) {
        double exact = static_cast<double>(m) * cumTiles / w.outputTiles;
        r = std::min<int64_t>(m, std::llround(exact / align) * align);
      }
      if (r <= prevRows)
        return false;
      rows.push_back(r - prevRows);
      compute.push_back(groups[g] * w.waveUs);
      comm.push_back(model.commUs(r - prevRows));
      prevRows = r;
    }
    ++evaluated;
    double ms = pipelineMakespan(compute, comm, model.getComputeContention(),
                                 model.getCommContention());
    // The first grouping is kept even if its time is not a number, so
    // that finishPlan says why instead of "no grouping".
    if (bestGroups.empty() || ms < bestUs) {
      bestUs = ms;
      bestGroups.assign(groups.begin(), groups.end());
    }
    return true;
  }

  double bestUs = std::numeric_limits<double>::infinity();
  std::vector<int64_t> bestGroups;
  uint64_t evaluated = 0;

private:
  const CostModel &model;
  const WaveDetails &w;
  std::vector<int64_t> rows;
  std::vector<double> compute, comm;
};

} // namespace

/// Pipeline steps (groups priced) of the whole search over `t` waves: all
/// groupings up to kExhaustiveWaves, else the pruned family below. In
/// double: it is compared with the work bound before anything runs, and t
/// can be near 2^62 waves.
static double searchSteps(int64_t t) {
  if (t <= kExhaustiveWaves)
    return std::ldexp(1.0, static_cast<int>(t - 1)) * static_cast<double>(t);
  double steps = static_cast<double>(t); // the single group
  for (int64_t first = 1; first <= kMaxEdgeGroupWaves; ++first) {
    for (int64_t lastG = 1; lastG <= kMaxEdgeGroupWaves; ++lastG) {
      double mid = static_cast<double>(t - first - lastG);
      // parts = 1..mid groups in the middle, plus the two edge groups.
      steps += mid == 0 ? 2 : mid * (mid + 1) / 2 + 2 * mid;
    }
  }
  return steps;
}

/// `total` items cut into `parts` near-equal consecutive groups.
static void appendEqualGroups(std::vector<int64_t> &out, int64_t total,
                              int64_t parts) {
  for (int64_t i = 0; i < parts; ++i)
    out.push_back(total / parts + (i < total % parts ? 1 : 0));
}

Expected<Plan> overlap::planner::planWaves(const CostModel &model) {
  const MatmulProblem &pb = model.getProblem();
  const Profile &profile = model.getProfile();
  if (exchangesInput(pb))
    return createStringError(
        std::errc::not_supported,
        "waves: FlashOverlap groups the waves of a GEMM whose output is "
        "communicated; %s feeds the GEMM's input (use mc2 or optimal)",
        describeCollective(pb).c_str());
  if (!profile.device.smCount || !profile.device.gemmTile)
    return createStringError(std::errc::not_supported,
                             "waves: %s has no device.sm_count and "
                             "device.gemm_tile to count waves with",
                             profile.source.c_str());

  WaveDetails w;
  auto [tm, tn] = *profile.device.gemmTile;
  int64_t sms = *profile.device.smCount;
  w.outputTiles = ((pb.m + tm - 1) / tm) * ((pb.n + tn - 1) / tn);
  w.tilesPerWave = sms - (model.commTakesSms() ? profile.device.commSms : 0);
  w.waves = (w.outputTiles + w.tilesPerWave - 1) / w.tilesPerWave;
  // The profile's GEMM time is for all SMs; a wave takes the same time with
  // fewer SMs, there are just more of them.
  int64_t fullWaves = (w.outputTiles + sms - 1) / sms;
  w.waveUs = model.gemmUs(pb.m) / fullWaves;

  const int64_t t = w.waves;
  if (double steps = searchSteps(t); steps > double(kMaxSearchSteps))
    return workBoundError(
        "waves",
        "grouping " + Twine(t) + " waves of " + Twine(w.tilesPerWave) +
            " output tiles of " + Twine(tm) + "x" + Twine(tn) + " (" +
            Twine(w.outputTiles) + " tiles)",
        steps < 1.8e19 ? static_cast<uint64_t>(steps) : UINT64_MAX,
        "pipeline steps",
        "use a profile with a larger device.gemm_tile, or mc2 or optimal");
  WaveSearch search(model, w);
  std::vector<int64_t> groups;
  if (t <= kExhaustiveWaves) {
    w.exhaustive = true;
    // Bit i of the mask set: a group ends after wave i.
    for (uint64_t mask = 0; mask < (uint64_t(1) << (t - 1)); ++mask) {
      groups.clear();
      int64_t start = 0;
      for (int64_t i = 0; i < t - 1; ++i) {
        if (mask & (uint64_t(1) << i)) {
          groups.push_back(i + 1 - start);
          start = i + 1;
        }
      }
      groups.push_back(t - start);
      search.evaluate(groups);
    }
  } else {
    w.exhaustive = false;
    search.evaluate({t});
    for (int64_t first = 1; first <= kMaxEdgeGroupWaves; ++first) {
      for (int64_t lastG = 1; lastG <= kMaxEdgeGroupWaves; ++lastG) {
        int64_t mid = t - first - lastG;
        if (mid < 0)
          continue;
        int64_t maxParts = std::max<int64_t>(1, mid);
        for (int64_t parts = mid == 0 ? 0 : 1; parts <= maxParts; ++parts) {
          groups.assign(1, first);
          if (parts)
            appendEqualGroups(groups, mid, parts);
          groups.push_back(lastG);
          search.evaluate(groups);
        }
      }
    }
  }
  if (search.bestGroups.empty())
    return createStringError(std::errc::not_supported,
                             "waves: no grouping of %lld waves leaves every "
                             "group at least %lld rows",
                             (long long)t, (long long)model.getAlignment());

  w.groups = search.bestGroups;
  w.candidatesEvaluated = search.evaluated;
  Plan plan;
  plan.strategy = "waves";
  plan.singleGemmKernel = true;
  // Rebuild rows and compute times of the chosen grouping.
  int64_t cumWaves = 0, prevRows = 0;
  for (size_t g = 0; g < w.groups.size(); ++g) {
    cumWaves += w.groups[g];
    int64_t cumTiles = std::min(w.outputTiles, cumWaves * w.tilesPerWave);
    int64_t r = pb.m;
    if (g + 1 < w.groups.size()) {
      double exact = static_cast<double>(pb.m) * cumTiles / w.outputTiles;
      r = std::min<int64_t>(pb.m, std::llround(exact / model.getAlignment()) *
                                      model.getAlignment());
    }
    plan.tiles.push_back(r - prevRows);
    plan.computeUs.push_back(w.groups[g] * w.waveUs);
    prevRows = r;
  }
  plan.waves = std::move(w);
  if (Error e = finishPlan(model, plan))
    return std::move(e);
  return std::move(plan);
}

//===- RankMajorStrategy.cpp - Choosing the chunks of a block ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The `rank-major` strategy: how to cut each rank's block of M/G rows into
// chunks (RankMajor.h). Every chunk is one contiguous GEMM and one shift, so
// smaller chunks expose less of the first GEMM (reduce-scatter) or the last
// one (all-gather) but pay more per-call latencies on both streams.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/RankMajor.h"
#include "overlap/Planner/Strategies.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <map>

using namespace llvm;
using namespace overlap::planner;

static Error refuse(const Twine &msg) {
  return createStringError(std::errc::invalid_argument, "rank-major: %s",
                           msg.str().c_str());
}

/// The cuts of a block of `block` rows tried: near-equal cuts into k chunks
/// of `align` rows (the larger first; the last also takes block mod align),
/// k = 1 .. block/align, and for k >= 2 the same with a first, a last, or a
/// first and a last chunk of one alignment unit. At most `maxChunks`
/// chunks.
static std::vector<std::vector<int64_t>> cuts(int64_t block, int64_t align,
                                              int64_t maxChunks) {
  std::vector<std::vector<int64_t>> out;
  out.push_back({block});
  // Near-equal: `n` chunks of whole alignment units over `rows` rows.
  auto nearEqual = [&](int64_t rows, int64_t n) {
    std::vector<int64_t> c;
    int64_t units = rows / align, rem = rows % align;
    if (n < 1 || units < n)
      return c;
    for (int64_t i = 0; i < n; ++i)
      c.push_back((units / n + (i < units % n ? 1 : 0)) * align);
    c.back() += rem;
    return c;
  };
  const int64_t most = std::min(block / align, maxChunks);
  for (int64_t k = 2; k <= most; ++k) {
    std::vector<int64_t> even = nearEqual(block, k);
    if (!even.empty())
      out.push_back(even);
    // A short first chunk starts the pipeline sooner (reduce-scatter's
    // first GEMM is exposed); a short last one ends it sooner (all-gather's
    // last GEMM, reduce-scatter's last shift).
    std::vector<int64_t> rest = nearEqual(block - align, k - 1);
    if (!rest.empty() && rest.front() > align) {
      std::vector<int64_t> first = {align};
      first.insert(first.end(), rest.begin(), rest.end());
      out.push_back(first);
      rest.push_back(align);
      out.push_back(rest);
    }
    if (k >= 3) {
      std::vector<int64_t> mid = nearEqual(block - 2 * align, k - 2);
      if (!mid.empty() && mid.front() > align) {
        std::vector<int64_t> both = {align};
        both.insert(both.end(), mid.begin(), mid.end());
        both.push_back(align);
        out.push_back(both);
      }
    }
  }
  return out;
}

Expected<Plan> overlap::planner::planRankMajor(const CostModel &model) {
  const MatmulProblem &pb = model.getProblem();
  if (pb.collective != Collective::ReduceScatter &&
      pb.collective != Collective::AllGather)
    return refuse("only reduce-scatter and all-gather have rank-major "
                  "tiles, not " +
                  describeCollective(pb));
  if (pb.ranks < 2)
    return refuse("one rank has nothing to exchange");
  if (pb.rowGroup > 1)
    return refuse("rows in groups of " + Twine(pb.rowGroup) +
                  " (row_group) are not cut into rank-major chunks");
  const int64_t g = pb.ranks, block = pb.m / g;
  if (!model.rankMajorSumUs())
    return createStringError(
        std::errc::not_supported,
        "rank-major: %s has no device.memory_bandwidth_gbps to price "
        "reduce-scatter's final sum of the %lld partials",
        model.getProfile().source.c_str(), (long long)g);

  // Prices by rows: a chunk's GEMM, and an exchange of a group's rows.
  std::map<int64_t, double> gemms, shifts;
  auto gemmOf = [&](int64_t rows) {
    auto [it, inserted] = gemms.try_emplace(rows);
    if (inserted)
      it->second = model.contiguousGemmUs(rows);
    return it->second;
  };
  auto shiftOf = [&](int64_t rows) {
    if (rows == 0)
      return 0.0;
    auto [it, inserted] = shifts.try_emplace(rows);
    if (inserted)
      it->second = model.shiftUs(rows);
    return it->second;
  };
  const bool rs = pb.collective == Collective::ReduceScatter;
  const double cComp = model.getComputeContention();
  const double cComm = model.getCommContention();
  std::vector<int64_t> best, bestGroups;
  double bestUs = 0;
  uint64_t steps = 0;
  uint64_t skipped = 0;
  std::vector<double> producer, consumer;
  // Unit u's GEMM and exchanged rows, and their prefix sums.
  std::vector<double> gemmSum;
  std::vector<int64_t> rowSum;
  std::vector<int64_t> groups;
  auto tryGroups = [&](const std::vector<int64_t> &cut,
                       const std::vector<int64_t> &grouping) {
    producer.clear();
    consumer.clear();
    size_t unit = 0;
    for (int64_t n : grouping) {
      double gemm = gemmSum[unit + n] - gemmSum[unit];
      double comm = shiftOf(rowSum[unit + n] - rowSum[unit]);
      unit += n;
      producer.push_back(rs ? gemm : comm);
      consumer.push_back(rs ? comm : gemm);
    }
    steps += grouping.size();
    double us = rs ? pipelineMakespan(producer, consumer, cComp, cComm)
                   : pipelineMakespan(producer, consumer, cComm, cComp);
    // Ties keep the earlier candidate (fewer chunks; all-ones first).
    if (best.empty() || us < bestUs * (1 - 1e-12)) {
      best = cut;
      bestGroups = grouping;
      bestUs = us;
    }
  };
  // The cuts' all-ones pipelines stay far below kMaxSearchSteps: fewer
  // than 3 x kMaxTiles^2 / (2G) steps (block/align and kMaxTiles/G chunks
  // at most). The groupings are tried while their steps fit in what is
  // left of it.
  for (const std::vector<int64_t> &cut :
       cuts(block, model.getProfile().alignment, kMaxTiles / g)) {
    // Execution order (RankMajor.h): reduce-scatter steps 1..G-1 then 0,
    // all-gather 0..G-1; step 0 has no exchange.
    const int64_t k = static_cast<int64_t>(cut.size()), units = g * k;
    gemmSum.assign(1, 0.0);
    rowSum.assign(1, 0);
    for (int64_t i = 0; i < g; ++i) {
      bool own = rs ? i == g - 1 : i == 0;
      for (int64_t rows : cut) {
        gemmSum.push_back(gemmSum.back() + gemmOf(rows));
        rowSum.push_back(rowSum.back() + (own ? 0 : rows));
      }
    }
    tryGroups(cut, std::vector<int64_t>(units, 1));
    // Fused exchanges (one call, one latency for several units): a first
    // group of f and a last of l units (f, l <= 4; a short first group
    // starts the pipeline sooner, a short last one ends it sooner), the
    // middle cut into m near-equal groups (the larger first).
    for (int64_t f = 1; f <= 4; ++f) {
      for (int64_t l = 1; l <= 4; ++l) {
        const int64_t mid = units - f - l;
        if (mid < 0)
          continue;
        for (int64_t m = mid == 0 ? 0 : 1; m <= mid; ++m) {
          // m + 2 groups; skip the all-ones grouping, tried above.
          if (f == 1 && l == 1 && m == mid)
            continue;
          if (steps + static_cast<uint64_t>(m + 2) > kMaxSearchSteps) {
            // The rest of this m's family only takes more steps.
            skipped += static_cast<uint64_t>(mid - m + 1);
            break;
          }
          groups.clear();
          groups.push_back(f);
          for (int64_t i = 0; i < m; ++i)
            groups.push_back(mid / m + (i < mid % m ? 1 : 0));
          groups.push_back(l);
          tryGroups(cut, groups);
        }
      }
    }
  }
  bool allOnes = std::all_of(bestGroups.begin(), bestGroups.end(),
                             [](int64_t n) { return n == 1; });
  Expected<Plan> plan = priceRankMajor(
      model, best, allOnes ? ArrayRef<int64_t>() : ArrayRef(bestGroups),
      "rank-major");
  if (plan && skipped > 0)
    plan->note = "rank-major: " + std::to_string(skipped) +
                 " exchange groupings were not tried (the planner's work "
                 "bound of " +
                 std::to_string(kMaxSearchSteps) + " pipeline steps)";
  return plan;
}

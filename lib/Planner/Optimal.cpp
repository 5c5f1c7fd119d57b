//===- Optimal.cpp - Exact minimum-makespan tiling -------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The simulated makespan of a tiling follows the recurrence in
// pipelineStep(): after the producer finishes a tile the state is (time T,
// consumer backlog W). The transitions do not depend on T, so the final
// makespan is T + g(W), where g (the best time still needed from a backlog
// W at that boundary) is nondecreasing. For one fixed tiling of the rest,
// final(W) is piecewise linear and each piece has slope 1 (the backlog is
// carried to the end) or s = cC (1 - 1/cP) (the consumer drains while the
// producer runs, which slows the producer); g, a minimum of such functions,
// has slopes within [lo, hi] = [min(1, s), max(1, s)]. So state a is never
// worse than state b when
//   T_a + lo W_a <= T_b + lo W_b   and   T_a + hi W_a <= T_b + hi W_b,
// i.e. Pareto dominance in (u, v) = (T + lo W, T + hi W). The DP keeps, for
// every boundary, the Pareto front of (u, v) over all tilings of the rows
// before it, and prunes states whose lower bound exceeds the best complete
// plan found. The result is the exact optimum of the model, the same model
// the simulator evaluates (tests check it against brute force).
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/TilePlanner.h"

#include <algorithm>
#include <limits>
#include <cstdio>
#include <cstdlib>

using namespace llvm;
using namespace overlap::planner;

namespace {

struct DPState {
  double time;
  double backlog;
  double u, v; // dominance coordinates, see above
  int32_t parentPos;
  int32_t parentIdx;
};

struct GridResult {
  double makespan = std::numeric_limits<double>::infinity();
  std::vector<int64_t> tiles;
};

/// Producer/consumer costs of a tile, cached by length: on one grid every
/// tile is j*align rows or j*align + rem rows.
class TileCosts {
public:
  TileCosts(const CostModel &model, int64_t align, int64_t rem,
            size_t maxBlocks)
      : model(model), align(align), rem(rem),
        cache(2 * (maxBlocks + 2), {-1.0, -1.0}) {}

  std::pair<double, double> get(int64_t rows) {
    int64_t j = rows / align;
    bool withRem = rows % align != 0;
    size_t slot = 2 * j + (withRem ? 1 : 0);
    assert(!withRem || rows % align == rem);
    (void)rem;
    auto &c = cache[slot];
    if (c.first < 0) {
      double g = model.gemmUs(rows), m = model.commUs(rows);
      bool commFirst = model.getOrder() == PipelineOrder::CommThenCompute;
      c = commFirst ? std::make_pair(m, g) : std::make_pair(g, m);
    }
    return c;
  }

private:
  const CostModel &model;
  int64_t align, rem;
  std::vector<std::pair<double, double>> cache;
};

} // namespace

static GridResult optimalOnGrid(const CostModel &model,
                                const std::vector<int64_t> &pos) {
  const size_t last = pos.size() - 1;
  const bool commFirst = model.getOrder() == PipelineOrder::CommThenCompute;
  const double cP = commFirst ? model.getCommContention()
                              : model.getComputeContention();
  const double cC = commFirst ? model.getComputeContention()
                              : model.getCommContention();
  const int64_t align = model.getAlignment();
  const double slope = cC * (1.0 - 1.0 / cP);
  const double lo = std::min(1.0, slope), hi = std::max(1.0, slope);
  TileCosts costs(model, align, model.getProblem().m % align,
                  static_cast<size_t>(model.getProblem().m / align));

  // Least producer / consumer work any tiling of the rows after boundary q
  // can have: part of the lower bound used for pruning.
  std::vector<double> restP(last + 1, 0.0), restC(last + 1, 0.0);
  for (size_t q = last; q-- > 0;) {
    double bp = std::numeric_limits<double>::infinity(), bc = bp;
    for (size_t r = q + 1; r <= last; ++r) {
      auto [p, c] = costs.get(pos[r] - pos[q]);
      bp = std::min(bp, p + restP[r]);
      bc = std::min(bc, c + restC[r]);
    }
    restP[q] = bp;
    restC[q] = bc;
  }

  GridResult best;
  size_t bestPos = 0, bestIdx = 0;
  // Seed the bound with uniform tilings on this grid.
  for (size_t n = 1; n <= std::min<size_t>(last, 64); ++n) {
    PipelineState s;
    for (size_t t = 0; t < n; ++t) {
      size_t from = last * t / n, to = last * (t + 1) / n;
      auto [p, c] = costs.get(pos[to] - pos[from]);
      s = pipelineStep(s, p, c, cP, cC);
    }
    best.makespan = std::min(best.makespan, s.timeUs + s.backlogUs);
  }
  double bound = best.makespan; // pruning bound, also for not-yet-recorded
  bool found = false;

  std::vector<std::vector<DPState>> fronts(last);
  fronts[0].push_back({0.0, 0.0, 0.0, 0.0, -1, -1});
  std::vector<DPState> cand;
  auto close = [&](size_t q) {
    // Finish every state at q with one last tile.
    auto [p, c] = costs.get(pos[last] - pos[q]);
    for (size_t idx = 0; idx < fronts[q].size(); ++idx) {
      const DPState &st = fronts[q][idx];
      PipelineState s = pipelineStep({st.time, st.backlog}, p, c, cP, cC);
      double total = s.timeUs + s.backlogUs;
      if (!found || total < best.makespan) {
        best.makespan = total;
        bestPos = q;
        bestIdx = idx;
        found = true;
        bound = std::min(bound, total);
      }
    }
  };
  close(0);
  for (size_t q = 1; q < last; ++q) {
    cand.clear();
    for (size_t from = 0; from < q; ++from) {
      const std::vector<DPState> &front = fronts[from];
      if (front.empty())
        continue;
      auto [p, c] = costs.get(pos[q] - pos[from]);
      for (size_t idx = 0; idx < front.size(); ++idx) {
        PipelineState s =
            pipelineStep({front[idx].time, front[idx].backlog}, p, c, cP, cC);
        double lb = s.timeUs + std::max(s.backlogUs + restC[q], restP[q]);
        if (lb > bound * (1 + 1e-12))
          continue;
        cand.push_back({s.timeUs, s.backlogUs, s.timeUs + lo * s.backlogUs,
                        s.timeUs + hi * s.backlogUs,
                        static_cast<int32_t>(from), static_cast<int32_t>(idx)});
      }
    }
    std::sort(cand.begin(), cand.end(), [](const DPState &a, const DPState &b) {
      return a.u < b.u || (a.u == b.u && a.v < b.v);
    });
    std::vector<DPState> &front = fronts[q];
    double minV = std::numeric_limits<double>::infinity();
    for (const DPState &st : cand) {
      if (st.v < minV) {
        front.push_back(st);
        minV = st.v;
      }
    }
    close(q);
    if (getenv("OPT_DEBUG")) fprintf(stderr, "q=%zu cand=%zu front=%zu bound=%f best=%f\n", q, cand.size(), front.size(), bound, best.makespan);
  }

  // Walk the parents back from the best closing state.
  std::vector<int64_t> cuts = {pos[last]};
  int32_t p = static_cast<int32_t>(bestPos), idx = static_cast<int32_t>(bestIdx);
  while (p > 0) {
    cuts.push_back(pos[p]);
    const DPState &st = fronts[p][idx];
    p = st.parentPos;
    idx = st.parentIdx;
  }
  cuts.push_back(0);
  std::reverse(cuts.begin(), cuts.end());
  for (size_t i = 1; i < cuts.size(); ++i)
    best.tiles.push_back(cuts[i] - cuts[i - 1]);
  return best;
}

Plan overlap::planner::planOptimal(const CostModel &model) {
  const int64_t m = model.getProblem().m;
  const int64_t align = model.getAlignment();
  const int64_t rem = m % align;
  const int64_t blocks = m / align;

  GridResult best;
  if (blocks <= 1) {
    best.tiles = {m};
  } else {
    // Remainder in the last tile: 0, a, 2a, ..., blocks*a, M.
    std::vector<int64_t> tail;
    for (int64_t b = 0; b <= blocks; ++b)
      tail.push_back(b * align);
    if (rem)
      tail.back() = m;
    best = optimalOnGrid(model, tail);
    if (rem) {
      // Remainder in the first tile: 0, rem + a, rem + 2a, ..., M.
      std::vector<int64_t> head = {0};
      for (int64_t b = 1; b <= blocks; ++b)
        head.push_back(rem + b * align);
      GridResult h = optimalOnGrid(model, head);
      if (h.makespan < best.makespan)
        best = std::move(h);
    }
  }
  Plan plan;
  plan.strategy = "optimal";
  plan.tiles = std::move(best.tiles);
  finishPlan(model, plan);
  return plan;
}

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

#include "overlap/Planner/Strategies.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <limits>

using namespace llvm;
using namespace overlap::planner;

namespace {

struct DPState {
  double time;
  double backlog;
  double u, v; // dominance coordinates, see above
  int32_t parentPos;
  int32_t parentIdx;
  bool dead = false;
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

/// The search's pipeline steps against the work bound.
struct StepBudget {
  uint64_t used = 0;
  /// Counts `n` more steps; false once past kMaxSearchSteps.
  bool spend(uint64_t n) {
    used += n;
    return used <= kMaxSearchSteps;
  }
};

} // namespace

static Error overBudget(const CostModel &model, uint64_t steps) {
  const int64_t m = model.getProblem().m, align = model.getAlignment();
  return workBoundError("optimal",
                        "the exact search over M = " + Twine(m) + " rows in " +
                            Twine(m / align) + " blocks of " + Twine(align),
                        steps, "pipeline steps",
                        "use mc2 or uniform:n, or a profile with a larger "
                        "alignment");
}

/// The best tiling on one grid of boundaries `pos`, if it is below
/// `upperBound` (the makespan of a known tiling); else no tiles. Fails when
/// `budget` runs out.
static Expected<GridResult> optimalOnGrid(const CostModel &model,
                                          const std::vector<int64_t> &pos,
                                          double upperBound,
                                          StepBudget &budget) {
  const size_t last = pos.size() - 1;
  const bool commFirst = model.getOrder() == PipelineOrder::CommThenCompute;
  const double cP =
      commFirst ? model.getCommContention() : model.getComputeContention();
  const double cC =
      commFirst ? model.getComputeContention() : model.getCommContention();
  const int64_t align = model.getAlignment();
  const double slope = cC * (1.0 - 1.0 / cP);
  const double lo = std::min(1.0, slope), hi = std::max(1.0, slope);
  TileCosts costs(model, align, model.getProblem().m % align,
                  static_cast<size_t>(model.getProblem().m / align));

  // Least producer / consumer work any tiling of the rows after boundary q
  // can have: part of the lower bound used for pruning.
  std::vector<double> restP(last + 1, 0.0), restC(last + 1, 0.0);
  if (!budget.spend(uint64_t(last) * (last + 1) / 2))
    return overBudget(model, budget.used);
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

  // Lower bound on the time still needed after boundary q from a consumer
  // backlog w, whatever the tiling of the rest: the producer must do at
  // least P = restP[q] and the consumer Q = w + restC[q]; if they overlap
  // for a time o, the producer is busy P + o (1 - 1/cP) and is followed by a
  // last consumer task of at least lastC, the consumer is busy
  // Q + o (1 - 1/cC), and both together cover P + Q - o (1/cP + 1/cC - 1).
  // The bound is the least, over o, of the largest of the three.
  const double lastC = costs.get(align).second;
  const double slowP = 1 - 1 / cP, slowC = 1 - 1 / cC;
  const double k3 = 1.0 / cP + 1.0 / cC - 1.0;
  auto remainingLowerBound = [&](size_t q, double w) {
    double p = restP[q], c = w + restC[q];
    double o =
        k3 <= 0 ? 0.0 : std::max(0.0, std::min(cC * (c - lastC), cP * p));
    return std::max(std::max(p + o * slowP + lastC, c + o * slowC),
                    p + c - o * k3);
  };

  GridResult best;
  size_t bestPos = 0, bestIdx = 0;
  best.makespan = upperBound;
  // Tighten the bound with uniform tilings on this grid.
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
  fronts[0].push_back({0.0, 0.0, 0.0, 0.0, -1, -1, false});
  std::vector<double> boundAtFilter(last,
                                    std::numeric_limits<double>::infinity());
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
    std::vector<DPState> &front = fronts[q];
    for (size_t from = 0; from < q; ++from) {
      std::vector<DPState> &src = fronts[from];
      if (src.empty())
        continue;
      if (boundAtFilter[from] > bound) {
        // The bound improved since this front was built: drop states that
        // can no longer lead to a better plan (they stay in place, marked,
        // so parent indices remain valid).
        for (DPState &st : src)
          if (!st.dead && st.time + remainingLowerBound(from, st.backlog) >
                              bound * (1 + 1e-12))
            st.dead = true;
        boundAtFilter[from] = bound;
      }
      auto [p, c] = costs.get(pos[q] - pos[from]);
      if (!budget.spend(src.size()))
        return overBudget(model, budget.used);
      for (size_t idx = 0; idx < src.size(); ++idx) {
        if (src[idx].dead)
          continue;
        PipelineState s =
            pipelineStep({src[idx].time, src[idx].backlog}, p, c, cP, cC);
        if (s.timeUs + remainingLowerBound(q, s.backlogUs) >
            bound * (1 + 1e-12))
          continue;
        DPState st{s.timeUs,
                   s.backlogUs,
                   s.timeUs + lo * s.backlogUs,
                   s.timeUs + hi * s.backlogUs,
                   static_cast<int32_t>(from),
                   static_cast<int32_t>(idx),
                   false};
        // Fronts stay small (tens of states): insert directly.
        bool dominated = false;
        for (const DPState &o : front)
          if (o.u <= st.u && o.v <= st.v) {
            dominated = true;
            break;
          }
        if (dominated)
          continue;
        llvm::erase_if(front, [&](const DPState &o) {
          return st.u <= o.u && st.v <= o.v;
        });
        front.push_back(st);
      }
    }
    if (!budget.spend(front.size()))
      return overBudget(model, budget.used);
    close(q);
  }

  if (!found)
    return GridResult(); // nothing on this grid beats the known tiling
  // Walk the parents back from the best closing state.
  std::vector<int64_t> cuts = {pos[last]};
  int32_t p = static_cast<int32_t>(bestPos),
          idx = static_cast<int32_t>(bestIdx);
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
  return std::move(best);
}

Expected<Plan> overlap::planner::planOptimal(const CostModel &model) {
  const int64_t m = model.getProblem().m;
  const int64_t align = model.getAlignment();
  const int64_t rem = m % align;
  const int64_t blocks = m / align;

  GridResult best;
  StepBudget budget;
  if (blocks <= 1) {
    best.tiles = {m};
  } else {
    // Every grid's search starts with the least work of the tiles after
    // each boundary, blocks (blocks + 1) / 2 steps: refuse before
    // allocating anything when that alone is past the bound.
    uint64_t least = uint64_t(blocks) * uint64_t(blocks + 1) / 2;
    if (least > kMaxSearchSteps)
      return overBudget(model, least);
    // MC²'s tiling lies on one of the two grids; its makespan bounds the
    // search from the start. (It may have too many tiles; then the uniform
    // tilings on the grid bound the search alone.)
    Expected<Plan> mc2OrErr = planMc2(model);
    std::vector<int64_t> mc2Tiles = {m};
    if (mc2OrErr)
      mc2Tiles = mc2OrErr->tiles;
    else
      consumeError(mc2OrErr.takeError());
    std::vector<double> prod, cons;
    bool commFirst = model.getOrder() == PipelineOrder::CommThenCompute;
    for (int64_t t : mc2Tiles) {
      double g = model.gemmUs(t), c = model.commUs(t);
      prod.push_back(commFirst ? c : g);
      cons.push_back(commFirst ? g : c);
    }
    const double cP =
        commFirst ? model.getCommContention() : model.getComputeContention();
    const double cC =
        commFirst ? model.getComputeContention() : model.getCommContention();
    best.makespan = pipelineMakespan(prod, cons, cP, cC);
    best.tiles = mc2Tiles;
    const double ub = best.makespan * (1 + 1e-12);
    // Remainder in the last tile: 0, a, 2a, ..., blocks*a, M.
    std::vector<int64_t> tail;
    for (int64_t b = 0; b <= blocks; ++b)
      tail.push_back(b * align);
    if (rem)
      tail.back() = m;
    Expected<GridResult> t = optimalOnGrid(model, tail, ub, budget);
    if (!t)
      return t.takeError();
    if (!t->tiles.empty() && t->makespan < best.makespan)
      best = std::move(*t);
    if (rem) {
      // Remainder in the first tile: 0, rem + a, rem + 2a, ..., M.
      std::vector<int64_t> head = {0};
      for (int64_t b = 1; b <= blocks; ++b)
        head.push_back(rem + b * align);
      Expected<GridResult> h = optimalOnGrid(model, head, ub, budget);
      if (!h)
        return h.takeError();
      if (!h->tiles.empty() && h->makespan < best.makespan)
        best = std::move(*h);
    }
  }
  Plan plan;
  plan.strategy = "optimal";
  plan.tiles = std::move(best.tiles);
  if (Error e = finishPlan(model, plan))
    return std::move(e);
  return std::move(plan);
}

//===- Mc2.cpp - The MC² seed's short-block / long-block tiles -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Strategies.h"

#include <algorithm>

using namespace llvm;
using namespace overlap::planner;

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Largest rows in [0, limit] with f(rows) <= t, for nondecreasing f.
template <typename Fn>
static int64_t invertCurve(Fn f, double t, int64_t limit) {
  int64_t lo = 0, hi = limit; // f(lo) <= t is the invariant (f(0) == 0)
  if (f(hi) <= t)
    return hi;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (f(mid) <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

Expected<Plan> overlap::planner::planMc2(const CostModel &model) {
  const MatmulProblem &pb = model.getProblem();
  const int64_t m = pb.m, k = pb.k, n = pb.n;
  const int64_t align = model.getAlignment();
  Mc2Details d;

  // Step 1: candidate short-block lengths. The seed's text says min, but its
  // worked example (384 for K=3072, N=8192) is the max.
  const int64_t gib4 = int64_t(4) << 30;
  d.a = ceilDiv(gib4, k * n);
  // b*K*N/1024 + b*N >= 6 MiB  <=>  b*(K*N + 1024*N) >= 6 GiB.
  d.b = ceilDiv(int64_t(6) << 30, k * n + 1024 * n);
  d.c = 3 * align;
  d.shortRowsInitial = std::max({d.a, d.b, d.c});

  Bound bound = model.getBound();
  Plan plan;
  plan.strategy = "mc2";
  if (d.shortRowsInitial >= m) {
    plan.tiles = {m};
    d.shortRows = m;
    plan.mc2 = d;
    if (Error e = finishPlan(model, plan))
      return std::move(e);
    return std::move(plan);
  }

  // Steps 2-3: the short block's contended time on the bound stream equals
  // the long block's time on the other stream.
  auto gemm = [&](int64_t r) { return model.gemmUs(r); };
  auto comm = [&](int64_t r) { return model.commUs(r); };
  int64_t m0 = d.shortRowsInitial;
  int64_t m1;
  if (bound == Bound::Comm) {
    d.balanceUs = model.commUs(m0) * model.getCommContention();
    m1 = invertCurve(gemm, d.balanceUs, m);
  } else {
    d.balanceUs = model.gemmUs(m0) * model.getComputeContention();
    m1 = invertCurve(comm, d.balanceUs, m);
  }
  m1 = std::max(align, m1 / align * align);
  d.longRowsInitial = m1;

  // Step 4: whole long blocks, then re-spread and align down; the short
  // block takes what is left.
  int64_t count = std::max<int64_t>(1, (m - m0) / m1);
  m1 = (m - m0) / count / align * align;
  if (m1 == 0) {
    plan.tiles = {m};
    d.shortRows = m;
  } else {
    // A long block of few rows on a large M: refused before the tiles are
    // made (finishPlan would refuse them after).
    if (Error e = checkLimit("mc2: tiles", count + 1, 1, kMaxTiles,
                             "a tile count (long blocks of " + Twine(m1) +
                                 " rows and the short block)"))
      return std::move(e);
    m0 = m - m1 * count;
    // Comm-bound: the GEMM stream is exposed at the start, so the short
    // block leads; compute-bound: the short block trails. All-gather runs
    // the pipeline the other way round, so its order is the mirror image.
    bool shortFirst = bound == Bound::Comm;
    if (pb.collective == Collective::AllGather)
      shortFirst = !shortFirst;
    d.shortFirst = shortFirst;
    if (shortFirst)
      plan.tiles.push_back(m0);
    plan.tiles.insert(plan.tiles.end(), count, m1);
    if (!shortFirst)
      plan.tiles.push_back(m0);
    d.count = count;
    d.longRows = m1;
    d.shortRows = m0;
  }
  plan.mc2 = d;
  if (Error e = finishPlan(model, plan))
    return std::move(e);
  return std::move(plan);
}

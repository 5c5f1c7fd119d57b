//===- ChainPlanner.cpp - OP_Count order and TEE-ACM² fusion ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/ChainPlanner.h"
#include "overlap/Planner/Limits.h"
#include "overlap/Support/EnumNames.h"

#include "llvm/ADT/Twine.h"

#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>

using namespace llvm;
using namespace overlap::planner;
using overlap::EnumName;

static const EnumName<Fusion> fusionNames[] = {
    {Fusion::None, "none"}, {Fusion::Left, "left"}, {Fusion::Right, "right"}};

StringRef overlap::planner::toString(Fusion fusion) {
  return nameOf(fusionNames, fusion);
}

static Error overflow() {
  return createStringError(std::errc::value_too_large,
                           "chain: a count overflows 64 bits; the dimensions "
                           "are too large");
}

static Error checkDims(ArrayRef<int64_t> dims) {
  if (dims.size() < 2)
    return createStringError(std::errc::invalid_argument,
                             "--dims: expected at least two dimensions "
                             "P0,P1 (one matrix), got %zu",
                             dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 1)
      return createStringError(std::errc::invalid_argument,
                               "--dims: expected positive dimensions, P%zu "
                               "is %lld",
                               i, (long long)dims[i]);
  return Error::success();
}

namespace {
/// Cormen's OP_Count tables, 1-based: cost[i][j], split[i][j].
struct OpCount {
  size_t n;
  std::vector<std::vector<int64_t>> cost;
  std::vector<std::vector<int64_t>> split;
};
} // namespace

static Expected<OpCount> runOpCount(ArrayRef<int64_t> p) {
  OpCount oc;
  oc.n = p.size() - 1;
  size_t n = oc.n;
  // The DP compares (n^3 - n) / 6 splits in n^2 tables: bounded before
  // anything is allocated (in double: n may be anything).
  double splits = (double(n) * n * n - double(n)) / 6;
  if (splits > double(kMaxSearchSteps))
    return workBoundError(
        "chain", "ordering " + Twine(n) + " matrices (OP_Count)",
        splits < 1.8e19 ? static_cast<uint64_t>(splits) : UINT64_MAX,
        "split comparisons", "plan shorter chains");
  oc.cost.assign(n + 1, std::vector<int64_t>(n + 1, 0));
  oc.split.assign(n + 1, std::vector<int64_t>(n + 1, 0));
  for (size_t len = 2; len <= n; ++len) {
    for (size_t i = 1; i + len - 1 <= n; ++i) {
      size_t j = i + len - 1;
      int64_t best = std::numeric_limits<int64_t>::max();
      for (size_t k = i; k < j; ++k) {
        int64_t prod, sum;
        if (__builtin_mul_overflow(p[i - 1], p[k], &prod) ||
            __builtin_mul_overflow(prod, p[j], &prod) ||
            __builtin_add_overflow(oc.cost[i][k], oc.cost[k + 1][j], &sum) ||
            __builtin_add_overflow(sum, prod, &sum))
          return overflow();
        // Strict <: the first best split wins, as in Cormen.
        if (sum < best) {
          best = sum;
          oc.split[i][j] = static_cast<int64_t>(k);
        }
      }
      oc.cost[i][j] = best;
    }
  }
  return std::move(oc);
}

Expected<int64_t> overlap::planner::minScalarMults(ArrayRef<int64_t> dims) {
  if (Error e = checkDims(dims))
    return std::move(e);
  Expected<OpCount> oc = runOpCount(dims);
  if (!oc)
    return oc.takeError();
  return oc->cost[1][oc->n];
}

/// Real value to the transfer count, refusing values beyond int64.
static Expected<int64_t> floorCount(double v) {
  double f = std::floor(v);
  if (!(f < 9.2e18) || f < -9.2e18)
    return overflow();
  return static_cast<int64_t>(f);
}

/// A node's transfers: its own (a real value, floored) plus its children's
/// counts, refusing sums beyond int64.
static Expected<int64_t>
nodeTransfers(double own, std::initializer_list<int64_t> children) {
  Expected<int64_t> sum = floorCount(own);
  if (!sum)
    return sum.takeError();
  for (int64_t c : children)
    if (__builtin_add_overflow(*sum, c, &*sum))
      return overflow();
  return sum;
}

Expected<ChainPlan> overlap::planner::planChain(ArrayRef<int64_t> dims,
                                                double fastMemElems) {
  if (Error e = checkDims(dims))
    return std::move(e);
  // Tiles are about its square root, in int64.
  if (!(fastMemElems >= 1 && fastMemElems <= kMaxFastMemory))
    return createStringError(std::errc::invalid_argument,
                             "--fast-memory: expected a fast-memory size of "
                             "at least 1 element and at most %g, got %g",
                             kMaxFastMemory, fastMemElems);
  Expected<OpCount> ocOr = runOpCount(dims);
  if (!ocOr)
    return ocOr.takeError();
  const OpCount &oc = *ocOr;
  auto P = [&](int64_t idx) { return static_cast<double>(dims[idx]); };
  const double mf = fastMemElems;
  const double sq = std::sqrt(mf);

  ChainPlan plan;
  plan.scalarMults = oc.cost[1][oc.n];

  // Post-order walk; returns the node's D (0 for a leaf).
  std::function<Expected<int64_t>(int64_t, int64_t, std::string &)> visit =
      [&](int64_t i, int64_t j, std::string &text) -> Expected<int64_t> {
    if (i == j) {
      text = "A" + std::to_string(i);
      return 0;
    }
    int64_t k = oc.split[i][j];
    std::string lt, rt;
    Expected<int64_t> dl = visit(i, k, lt);
    if (!dl)
      return dl.takeError();
    Expected<int64_t> dr = visit(k + 1, j, rt);
    if (!dr)
      return dr.takeError();
    text = "(" + lt + " " + rt + ")";

    auto ind = [](bool c) { return c ? 1.0 : 0.0; };
    // D of an inner node (already computed as a child's final) by range.
    auto childD = [&](int64_t a, int64_t b) -> int64_t {
      if (a == b)
        return 0;
      for (const ChainNode &nd : plan.nodes)
        if (nd.i == a && nd.j == b)
          return nd.finalTransfers;
      llvm_unreachable("child visited before its parent");
    };

    ChainNode node;
    node.i = i;
    node.j = j;
    node.k = k;
    double noFuse = 2.0 * P(i - 1) * P(k) * P(j) / sq +
                    ind(i != k) * P(i - 1) * P(k) +
                    ind(k + 1 != j) * P(k) * P(j);
    Expected<int64_t> noFuseTotal = nodeTransfers(noFuse, {*dl, *dr});
    if (!noFuseTotal)
      return noFuseTotal.takeError();
    node.noFuse = *noFuseTotal;
    node.decision = Fusion::None;
    node.finalTransfers = node.noFuse;
    node.tileX = node.tileY = static_cast<int64_t>(std::floor(sq));
    // A fusion with fewer transfers than the best so far, on x-by-y tiles,
    // becomes the node's decision.
    auto consider = [&](Fusion fusion, int64_t transfers, double x, double y) {
      if (transfers >= node.finalTransfers)
        return;
      node.finalTransfers = transfers;
      node.decision = fusion;
      node.tileX = static_cast<int64_t>(x);
      node.tileY = static_cast<int64_t>(y);
    };

    // Left fuse: ((A B) C) with the left child split at k1.
    if (k > i) {
      int64_t k1 = oc.split[i][k];
      double alpha = P(j) / P(k1);
      double alphaP = (1 + 2 * alpha) / (1 + alpha);
      double x = std::floor(std::sqrt(mf / alphaP));
      double y = std::floor(std::sqrt(mf * alphaP));
      if (x >= 1 && y >= 1) {
        double h =
            P(i - 1) * P(k1) * P(k) * (1 + alpha) * (alphaP * x + y) / (x * y) +
            ind(i != k1) * P(i - 1) * P(k1) + ind(k1 + 1 != k) * P(k1) * P(k) +
            ind(k + 1 != j) * P(k) * P(j) - 2 * P(i - 1) * P(j);
        Expected<int64_t> left =
            nodeTransfers(h, {childD(i, k1), childD(k1 + 1, k), *dr});
        if (!left)
          return left.takeError();
        node.leftFuse = *left;
        consider(Fusion::Left, *left, x, y);
      }
    }
    // Right fuse: (A (B C)) with the right child split at k2.
    if (j > k + 1) {
      int64_t k2 = oc.split[k + 1][j];
      double beta = P(i - 1) / P(k);
      double betaP = (1 + 2 * beta) / (1 + beta);
      double x = std::floor(std::sqrt(mf * betaP));
      double y = std::floor(std::sqrt(mf / betaP));
      if (x >= 1 && y >= 1) {
        double h =
            P(k) * P(k2) * P(j) * (1 + beta) * (betaP * y + x) / (x * y) +
            ind(k + 1 != k2) * P(k) * P(k2) + ind(k2 + 1 != j) * P(k2) * P(j) +
            ind(i != k) * P(i - 1) * P(k) - 2 * P(i - 1) * P(j);
        Expected<int64_t> right =
            nodeTransfers(h, {*dl, childD(k + 1, k2), childD(k2 + 1, j)});
        if (!right)
          return right.takeError();
        node.rightFuse = *right;
        consider(Fusion::Right, *right, x, y);
      }
    }
    plan.nodes.push_back(node);
    return node.finalTransfers;
  };

  std::string order;
  Expected<int64_t> total = visit(1, static_cast<int64_t>(oc.n), order);
  if (!total)
    return total.takeError();
  plan.order = std::move(order);
  plan.totalTransfers = *total;
  return std::move(plan);
}

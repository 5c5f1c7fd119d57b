//===- TestHelpers.h - Shared helpers for Planner tests --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_UNITTESTS_PLANNER_TESTHELPERS_H
#define OVERLAP_UNITTESTS_PLANNER_TESTHELPERS_H

#include "overlap/Planner/Profile.h"

#include "llvm/Support/Error.h"
#include "gtest/gtest.h"

#include <cmath>
#include <functional>
#include <string>
#include <system_error>

namespace overlap {
namespace planner {
namespace testing_helpers {

/// Adds to `p` the GEMM curve `gemm` for (n, k), and a comm curve at 8
/// ranks for each of all-reduce, reduce-scatter and all-gather, in that
/// order, each as `comm()` makes it.
inline void addCurves(Profile &p, int64_t n, int64_t k, Curve gemm,
                      const std::function<CommCurve()> &comm) {
  GemmCurve g;
  g.n = n;
  g.k = k;
  g.curve = std::move(gemm);
  p.gemmCurves.push_back(g);
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter,
                       Collective::AllGather}) {
    CommCurve cc = comm();
    cc.collective = c;
    cc.ranks = 8;
    p.commCurves.push_back(cc);
  }
}

/// Linear curves: one GEMM curve for (n, k) of `gemmPerRow` µs per row,
/// and all-reduce, reduce-scatter and all-gather measured at 8 ranks,
/// `commLatency + commPerUnit x` µs for x units of `bytesPerUnit` bytes.
inline Profile linearCurvesProfile(int64_t n, int64_t k, double gemmPerRow,
                                   double bytesPerUnit, double commLatency,
                                   double commPerUnit) {
  Profile p;
  p.source = "linear";
  addCurves(p, n, k, Curve::piecewise({{0, INFINITY, {0, gemmPerRow}}}), [&] {
    CommCurve cc;
    cc.bytesPerUnit = bytesPerUnit;
    cc.curve = Curve::piecewise({{0, INFINITY, {commLatency, commPerUnit}}});
    return cc;
  });
  return p;
}

/// The message of a failed Expected, or "" (and a test failure) when it
/// succeeded.
template <typename T> std::string errorOf(llvm::Expected<T> value) {
  if (value) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(value.takeError());
}

/// The error code of a failed Expected.
template <typename T> std::error_code codeOf(llvm::Expected<T> value) {
  if (value) {
    ADD_FAILURE() << "expected an error";
    return {};
  }
  std::error_code ec;
  llvm::handleAllErrors(value.takeError(), [&](const llvm::ErrorInfoBase &e) {
    ec = e.convertToErrorCode();
  });
  return ec;
}

/// The value of an Expected that must succeed; aborts the test otherwise.
#define OVERLAP_ASSIGN_OR_FAIL(lhs, expr)                                      \
  auto lhs##OrErr = (expr);                                                    \
  if (!lhs##OrErr) {                                                           \
    FAIL() << llvm::toString(lhs##OrErr.takeError());                          \
  }                                                                            \
  auto &lhs = *lhs##OrErr

} // namespace testing_helpers
} // namespace planner
} // namespace overlap

#endif // OVERLAP_UNITTESTS_PLANNER_TESTHELPERS_H

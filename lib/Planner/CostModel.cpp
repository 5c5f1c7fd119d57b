//===- CostModel.cpp - Per-call GEMM and collective costs ------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/CostModel.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <numeric>

using namespace llvm;
using namespace overlap::planner;

StringRef overlap::planner::toString(Bound bound) {
  return bound == Bound::Comm ? "comm" : "compute";
}

static Error badProblem(const Twine &msg) {
  return createStringError(std::errc::invalid_argument, "%s",
                           msg.str().c_str());
}

Expected<CostModel> CostModel::create(const Profile &profile,
                                      const MatmulProblem &problem) {
  if (problem.m < 1)
    return badProblem("--m: expected rows M >= 1, got " + Twine(problem.m));
  if (problem.n < 1)
    return badProblem("--n: expected columns N >= 1, got " + Twine(problem.n));
  if (problem.k < 1)
    return badProblem("--k: expected depth K >= 1, got " + Twine(problem.k));
  if (problem.ranks < 1)
    return badProblem("--ranks: expected a group size >= 1, got " +
                      Twine(problem.ranks));
  if (problem.collective != Collective::AllReduce &&
      problem.m % problem.ranks != 0)
    return badProblem(
        "--m: " + toString(problem.collective) +
        " needs M divisible by the group size (M = " + Twine(problem.m) +
        ", ranks = " + Twine(problem.ranks) + ")");

  CostModel model;
  model.profile = &profile;
  model.problem = problem;
  model.gemmCurve = profile.findGemmCurve(problem.n, problem.k, problem.dtype);
  if (!model.gemmCurve) {
    std::optional<double> peak = profile.device.getPeakFlops(problem.dtype);
    if (!profile.rooflineEfficiency || !peak)
      return createStringError(
          std::errc::not_supported,
          "%s: no GEMM curve for N=%lld K=%lld %s and no roofline fallback "
          "(gemm.roofline with device.peak_tflops.%s)",
          profile.source.c_str(), (long long)problem.n, (long long)problem.k,
          toString(problem.dtype).str().c_str(),
          toString(problem.dtype).str().c_str());
    model.peakFlops = *peak * *profile.rooflineEfficiency;
    model.bandwidth =
        *profile.device.memoryBandwidth * *profile.rooflineEfficiency;
  }
  if (problem.ranks > 1) {
    model.commCurve = profile.findCommCurve(problem.collective, problem.ranks);
    if (!model.commCurve)
      return createStringError(
          std::errc::not_supported, "%s: no curve for %s in \"collectives\"",
          profile.source.c_str(), toString(problem.collective).str().c_str());
    model.commScale = ringFactor(problem.collective, problem.ranks) /
                      ringFactor(problem.collective, model.commCurve->ranks);
  }
  return std::move(model);
}

PipelineOrder CostModel::getOrder() const {
  return problem.collective == Collective::AllGather
             ? PipelineOrder::CommThenCompute
             : PipelineOrder::ComputeThenComm;
}

double CostModel::gemmUs(int64_t rows) const {
  if (rows <= 0)
    return 0;
  double lat = profile->gemmLatencyUs;
  if (gemmCurve)
    return gemmCurve->curve.eval(static_cast<double>(rows)) + lat;
  double m = rows, n = problem.n, k = problem.k;
  double flops = 2.0 * m * n * k;
  double bytes = (m * k + k * n + m * n) * byteWidth(problem.dtype);
  return std::max(flops / peakFlops, bytes / bandwidth) * 1e6 + lat;
}

double CostModel::commBytes(int64_t rows) const {
  int64_t width =
      problem.collective == Collective::AllGather ? problem.k : problem.n;
  return static_cast<double>(rows) * static_cast<double>(width) *
         byteWidth(problem.dtype);
}

double CostModel::commUs(int64_t rows) const {
  if (rows <= 0 || !commCurve)
    return 0;
  double x = commBytes(rows) / commCurve->bytesPerUnit;
  return commCurve->curve.eval(x) * commScale + commCurve->latencyUs;
}

double CostModel::idealUs() const {
  return std::max(gemmUs(problem.m), commUs(problem.m));
}

Bound CostModel::getBound() const {
  return commUs(problem.m) > gemmUs(problem.m) ? Bound::Comm : Bound::Compute;
}

std::string CostModel::describeGemmSource() const {
  if (gemmCurve)
    return formatv("curve N={0} K={1} {2}", gemmCurve->n, gemmCurve->k,
                   toString(gemmCurve->dtype))
        .str();
  return formatv("roofline ({0:f1} TFLOP/s, {1:f0} GB/s after efficiency "
                 "{2})",
                 peakFlops / 1e12, bandwidth / 1e9,
                 *profile->rooflineEfficiency)
      .str();
}

std::string CostModel::describeCommSource() const {
  if (!commCurve)
    return "none (one rank)";
  if (commCurve->ranks == problem.ranks)
    return formatv("{0} curve, {1} ranks", toString(problem.collective),
                   commCurve->ranks)
        .str();
  return formatv("{0} curve measured at {1} ranks, scaled x{2:f4} (ring "
                 "factor) to {3} ranks",
                 toString(problem.collective), commCurve->ranks, commScale,
                 problem.ranks)
      .str();
}

int64_t overlap::planner::CostModel::getAlignment() const {
  if (problem.collective == Collective::AllReduce || problem.ranks <= 1)
    return profile->alignment;
  return std::lcm(profile->alignment, problem.ranks);
}


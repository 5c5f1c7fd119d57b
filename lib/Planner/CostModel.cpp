//===- CostModel.cpp - Per-call GEMM and collective costs ------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/CostModel.h"
#include "overlap/Planner/Limits.h"
#include "overlap/Support/EnumNames.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace llvm;
using namespace overlap::planner;
using overlap::EnumName;

StringRef overlap::planner::toString(Bound bound) {
  return bound == Bound::Comm ? "comm" : "compute";
}

static const EnumName<TileGemmPricing> tileGemmPricingNames[] = {
    {TileGemmPricing::Contiguous, "contiguous"},
    {TileGemmPricing::BatchedCurve, "batched-curve"},
    {TileGemmPricing::TileQuantized, "tile-quantized"},
    {TileGemmPricing::UnbatchedApproximation, "unbatched-approximation"}};

StringRef overlap::planner::toString(TileGemmPricing pricing) {
  return nameOf(tileGemmPricingNames, pricing);
}

static const EnumName<AllToAllSide> allToAllSideNames[] = {
    {AllToAllSide::Dispatch, "dispatch"}, {AllToAllSide::Combine, "combine"}};

std::optional<AllToAllSide>
overlap::planner::parseAllToAllSide(StringRef name) {
  return valueOf(allToAllSideNames, name);
}

StringRef overlap::planner::toString(AllToAllSide side) {
  return nameOf(allToAllSideNames, side);
}

bool overlap::planner::exchangesInput(Collective collective,
                                      AllToAllSide side) {
  return collective == Collective::AllGather || dispatches(collective, side);
}

bool overlap::planner::exchangesInput(const MatmulProblem &problem) {
  return exchangesInput(problem.collective, problem.side);
}

std::string overlap::planner::describeCollective(const MatmulProblem &problem) {
  std::string text = toString(problem.collective).str();
  if (problem.collective == Collective::AllToAll)
    text += " (" + toString(problem.side).str() + ")";
  return text;
}

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static Error badProblem(const Twine &msg) {
  return createStringError(std::errc::invalid_argument, "%s",
                           msg.str().c_str());
}

Expected<CostModel> CostModel::create(const Profile &profile,
                                      const MatmulProblem &problem) {
  // The limits (Limits.h) keep every product of sizes below 2^62.
  if (Error e = checkLimit("--m", problem.m, 1, kMaxDim, "rows M"))
    return std::move(e);
  if (Error e = checkLimit("--n", problem.n, 1, kMaxDim, "columns N"))
    return std::move(e);
  if (Error e = checkLimit("--k", problem.k, 1, kMaxDim, "depth K"))
    return std::move(e);
  if (Error e =
          checkLimit("--ranks", problem.ranks, 1, kMaxRanks, "a group size"))
    return std::move(e);
  if (Error e = checkLimit("--experts", problem.experts, 1, kMaxRanks,
                           "an expert count per rank"))
    return std::move(e);
  if (problem.experts > 1 && problem.collective != Collective::AllToAll)
    return badProblem("--experts: only all-to-all has experts (got " +
                      Twine(problem.experts) + " for " +
                      toString(problem.collective) + ")");
  if (problem.experts > 1 && problem.m % (problem.ranks * problem.experts) != 0)
    return badProblem(
        "--m: all-to-all with " + Twine(problem.experts) +
        " experts per rank needs M divisible by ranks x experts (M = " +
        Twine(problem.m) + ", ranks = " + Twine(problem.ranks) +
        ", experts = " + Twine(problem.experts) + ")");
  if (problem.rowGroup < 1 ||
      (problem.rowGroup > 1 &&
       problem.collective != Collective::ReduceScatter &&
       problem.collective != Collective::AllGather))
    return badProblem("row_group: " + Twine(problem.rowGroup) +
                      " (a positive group of rows, above 1 only for "
                      "reduce-scatter and all-gather)");
  if (problem.rowGroup > 1 &&
      problem.m % (problem.ranks * problem.rowGroup) != 0)
    return badProblem(
        "--m: rows in groups of " + Twine(problem.rowGroup) +
        " need M divisible by ranks x row_group (M = " + Twine(problem.m) +
        ", ranks = " + Twine(problem.ranks) + ")");
  if (problem.computeCopyBytesPerRow < 0 || problem.commCopyBytesPerRow < 0 ||
      !std::isfinite(problem.computeCopyBytesPerRow) ||
      !std::isfinite(problem.commCopyBytesPerRow))
    return badProblem("copy bytes per row must be finite and >= 0");
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
  std::optional<double> peak = profile.device.getPeakFlops(problem.dtype);
  if (!model.gemmCurve && profile.rooflineEfficiency && peak) {
    model.peakFlops = *peak * *profile.rooflineEfficiency;
    model.bandwidth =
        *profile.device.memoryBandwidth * *profile.rooflineEfficiency;
  } else if (!model.gemmCurve) {
    Profile::ScaledCurve near =
        profile.findNearestGemmCurve(problem.n, problem.k, problem.dtype);
    if (!near.curve)
      return createStringError(
          std::errc::not_supported,
          "%s: no GEMM curve for N=%lld K=%lld %s with batch 1, no roofline "
          "fallback (gemm.roofline with device.peak_tflops.%s) and no curve "
          "to scale from (one of %s, or of another dtype with both dtypes' "
          "device.peak_tflops)",
          profile.source.c_str(), (long long)problem.n, (long long)problem.k,
          toString(problem.dtype).str().c_str(),
          toString(problem.dtype).str().c_str(),
          toString(problem.dtype).str().c_str());
    model.gemmCurve = near.curve;
    model.gemmScale = near.scale;
  }
  // Reduce-scatter, all-gather and all-to-all tiles smaller than M are
  // strided-batched GEMMs of G = ranks matrices (docs/architecture.md); with
  // one rank there is one matrix, which is one GEMM.
  if (problem.collective != Collective::AllReduce && problem.ranks > 1) {
    model.batchCurve = profile.findGemmCurve(problem.n, problem.k,
                                             problem.dtype, problem.ranks);
    // A neighbour's batch-G curve only where the batch-1 curve is one too
    // (an exact batch-1 curve or the roofline is not mixed with a guess).
    if (!model.batchCurve && model.gemmScale != 1.0) {
      Profile::ScaledCurve near = profile.findNearestGemmCurve(
          problem.n, problem.k, problem.dtype, problem.ranks);
      model.batchCurve = near.curve;
      model.batchScale = near.scale;
    }
    model.tilePricing = model.batchCurve ? TileGemmPricing::BatchedCurve
                        : profile.device.gemmTile
                            ? TileGemmPricing::TileQuantized
                            : TileGemmPricing::UnbatchedApproximation;
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
  return exchangesInput(problem) ? PipelineOrder::CommThenCompute
                                 : PipelineOrder::ComputeThenComm;
}

double CostModel::gemmUs(int64_t rows, int64_t calls) const {
  // The tile's own copies on the compute stream (none for all of M).
  double copies =
      rows > 0 && rows < problem.m
          ? copyUs(problem.computeCopyBytesPerRow * static_cast<double>(rows))
          : 0.0;
  // With several experts, one GEMM per expert of its share of the rows.
  const int64_t e = problem.experts;
  if (e > 1)
    return static_cast<double>(e) * expertGemmUs(rows / e, calls) + copies;
  return expertGemmUs(rows, calls) + copies;
}

double CostModel::copyUs(double bytes) const {
  const std::optional<double> &bw = profile->device.memoryBandwidth;
  return bytes > 0 && bw && *bw > 0 ? bytes / *bw * 1e6 : 0.0;
}

double CostModel::fullGemmUs() const {
  return static_cast<double>(problem.experts) *
         contiguousGemmUs(problem.m / problem.experts);
}

double CostModel::expertGemmUs(int64_t rows, int64_t calls) const {
  if (rows <= 0)
    return 0;
  calls = std::clamp<int64_t>(calls, 1, rows);
  if (calls == 1)
    return rows < problem.m / problem.experts ? batchedGemmUs(rows)
                                              : contiguousGemmUs(rows);
  // Separate calls, each on its own contiguous rows (one rank's piece):
  // rows % calls of them one row longer. Two prices, however many calls.
  // (A term with no calls is left out, not priced as 0 x inf = nan.)
  int64_t longer = rows % calls;
  double us =
      static_cast<double>(calls - longer) * contiguousGemmUs(rows / calls);
  if (longer > 0)
    us += static_cast<double>(longer) * contiguousGemmUs(rows / calls + 1);
  return us;
}

double CostModel::batchedGemmUs(int64_t rows) const {
  switch (tilePricing) {
  case TileGemmPricing::Contiguous:
  case TileGemmPricing::UnbatchedApproximation:
    return contiguousGemmUs(rows);
  case TileGemmPricing::BatchedCurve:
    return batchCurve->curve.eval(static_cast<double>(rows)) * batchScale +
           profile->gemmLatencyUs;
  case TileGemmPricing::TileQuantized: {
    // Each of the G matrices of q rows is computed in whole output tiles of
    // tr rows: G ceil(q / tr) row tiles, as many as one GEMM of
    // G ceil(q / tr) tr rows has. That is at least `rows` rows, so never
    // below the unbatched price (GEMM prices never fall as rows grow).
    int64_t g = problem.ranks;
    int64_t tr = profile->device.gemmTile->first;
    return contiguousGemmUs(g * ceilDiv(ceilDiv(rows, g), tr) * tr);
  }
  }
  llvm_unreachable("unknown tile GEMM pricing");
}

double CostModel::contiguousGemmUs(int64_t rows) const {
  if (rows <= 0)
    return 0;
  double lat = profile->gemmLatencyUs;
  if (gemmCurve)
    return gemmCurve->curve.eval(static_cast<double>(rows)) * gemmScale + lat;
  double m = rows, n = problem.n, k = problem.k;
  double flops = 2.0 * m * n * k;
  double bytes = (m * k + k * n + m * n) * byteWidth(problem.dtype);
  return std::max(flops / peakFlops, bytes / bandwidth) * 1e6 + lat;
}

double CostModel::commBytes(int64_t rows) const {
  int64_t width = exchangesInput(problem) ? problem.k : problem.n;
  return static_cast<double>(rows) * static_cast<double>(width) *
         byteWidth(problem.commDtype.value_or(problem.dtype));
}

double CostModel::commUs(int64_t rows) const {
  if (rows <= 0 || !commCurve)
    return 0;
  double x = commBytes(rows) / commCurve->bytesPerUnit;
  double copies =
      rows < problem.m
          ? copyUs(problem.commCopyBytesPerRow * static_cast<double>(rows))
          : 0.0;
  return commCurve->curve.eval(x) * commScale + commCurve->latencyUs + copies;
}

double CostModel::shiftBytes(int64_t rows) const { return commBytes(rows); }

double CostModel::shiftUs(int64_t rows) const {
  if (rows <= 0 || !commCurve || problem.ranks < 2)
    return 0;
  // The ring collective of a buffer X puts (G-1)/G X bytes on the wire per
  // rank: the buffer whose ring wire bytes are the shift's.
  const double g = static_cast<double>(problem.ranks);
  double x = shiftBytes(rows) * g / (g - 1) / commCurve->bytesPerUnit;
  return commCurve->curve.eval(x) * commScale + commCurve->latencyUs;
}

std::optional<double> CostModel::rankMajorSumUs() const {
  if (problem.collective != Collective::ReduceScatter || problem.ranks < 2)
    return 0.0;
  const std::optional<double> &bw = profile->device.memoryBandwidth;
  if (!bw || !(*bw > 0))
    return std::nullopt;
  double g = static_cast<double>(problem.ranks);
  double bytes = (g + 1) * static_cast<double>(problem.m / problem.ranks) *
                 static_cast<double>(problem.n) *
                 byteWidth(problem.commDtype.value_or(problem.dtype));
  return bytes / *bw * 1e6;
}

double CostModel::idealUs() const {
  return std::max(fullGemmUs(), commUs(problem.m));
}

Bound CostModel::getBound() const {
  return commUs(problem.m) > fullGemmUs() ? Bound::Comm : Bound::Compute;
}

/// "curve N=.. K=.. dtype", and for a neighbour's curve what it stands in
/// for and its factor.
static std::string describeCurve(const GemmCurve &curve, double scale,
                                 const MatmulProblem &problem, int64_t batch) {
  std::string text =
      formatv("curve N={0} K={1} {2}", curve.n, curve.k, toString(curve.dtype))
          .str();
  if (batch > 1)
    text += formatv(" batch {0}", batch).str();
  if (curve.n == problem.n && curve.k == problem.k &&
      curve.dtype == problem.dtype)
    return text;
  // (formatv has no %g style: "{0:g4}" asserts in a build with assertions.)
  return text + formatv(" scaled x{0} (nearest measured; no curve for "
                        "N={1} K={2} {3}{4}: a prediction)",
                        llvm::format("%.3g", scale), problem.n, problem.k,
                        toString(problem.dtype),
                        batch > 1 ? formatv(" batch {0}", batch).str() : "")
                    .str();
}

std::string CostModel::describeGemmSource() const {
  std::string source =
      gemmCurve ? describeCurve(*gemmCurve, gemmScale, problem, 1)
                : formatv("roofline ({0:f1} TFLOP/s, {1:f0} GB/s after "
                          "efficiency {2})",
                          peakFlops / 1e12, bandwidth / 1e9,
                          *profile->rooflineEfficiency)
                      .str();
  if (tilePricing == TileGemmPricing::Contiguous)
    return source;
  int64_t g = problem.ranks;
  source += formatv("; {0} tiles < M (batched GEMM of {1} matrices): ",
                    toString(problem.collective), g);
  switch (tilePricing) {
  case TileGemmPricing::BatchedCurve:
    source += "batched " + describeCurve(*batchCurve, batchScale, problem,
                                         batchCurve->batch);
    break;
  case TileGemmPricing::TileQuantized:
    source += formatv("tile-quantized, one GEMM of {0} x ceil(rows/{0} / {1}) "
                      "x {1} rows (no batch-{0} curve)",
                      g, profile->device.gemmTile->first);
    break;
  case TileGemmPricing::UnbatchedApproximation:
    source += formatv("unbatched approximation, one GEMM of the tile's rows "
                      "(no batch-{0} curve, no device.gemm_tile)",
                      g);
    break;
  case TileGemmPricing::Contiguous:
    llvm_unreachable("returned above");
  }
  return source;
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

int64_t overlap::planner::CostModel::getMinAlignment() const {
  if (problem.collective == Collective::AllReduce)
    return 1;
  if (problem.ranks <= 1)
    return problem.rowGroup;
  return problem.ranks * problem.experts * problem.rowGroup;
}

int64_t overlap::planner::CostModel::getAlignment() const {
  if (problem.collective == Collective::AllReduce)
    return profile->alignment;
  return std::lcm(profile->alignment, getMinAlignment());
  // (ranks <= 1 and rowGroup 1: the minimum is 1, the profile's alignment.)
}

//===- Ficco.cpp - FiCCO schedule heuristic --------------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Seed 002: communication is cut one level finer than the shard (R pieces
// for R ranks). The heuristic picks the communication shape first (1D if
// M > K, else 2D, which has a single schedule, uniform-fused-2D), then among
// the 1D schedules matches the GEMM's inefficiency sensitivity against the
// machine: the GEMM's op-to-byte ratio times its memory traffic
// (OTB x MT = its FLOPs) against the machine's (OTB x bandwidth = peak
// FLOP/s), over a reference time. Below `low`: uniform-fused-1D (low DIL,
// high CIL); above `high`: hetero-unfused-1D; between: hetero-fused-1D.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/Strategies.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;
using namespace overlap::planner;

Expected<Plan> overlap::planner::planFicco(const CostModel &model) {
  const MatmulProblem &pb = model.getProblem();
  const Profile &profile = model.getProfile();
  std::optional<double> peak = profile.device.getPeakFlops(pb.dtype);
  if (!peak)
    return createStringError(std::errc::not_supported,
                             "ficco: %s has no device.peak_tflops.%s to "
                             "compare the GEMM with",
                             profile.source.c_str(),
                             toString(pb.dtype).str().c_str());

  FiccoDetails f;
  double m = pb.m, n = pb.n, k = pb.k;
  double flops = 2.0 * m * n * k;
  f.memoryTrafficBytes = (m * k + n * k + m * n) * byteWidth(pb.dtype);
  f.opToByte = flops / f.memoryTrafficBytes;
  const FiccoParams &fp = profile.ficco;
  f.score = flops / (*peak * fp.referenceUs * 1e-6);

  bool unfused = false;
  if (pb.m > pb.k) {
    std::string why =
        formatv("M={0} > K={1}: 1D; OTB x MT = {2:f1} FLOP/B x "
                "{3:f1} MB = {4:e} FLOP, {5:f3} x the machine's "
                "{6:f1} TFLOP/s x {7} us",
                pb.m, pb.k, f.opToByte, f.memoryTrafficBytes / 1e6, flops,
                f.score, *peak / 1e12, fp.referenceUs);
    if (f.score < fp.low) {
      f.schedule = "uniform-fused-1D";
      f.reason = why + formatv(" < {0}: low OTB and MT, pick the low-DIL "
                               "high-CIL schedule",
                               fp.low)
                           .str();
    } else if (f.score > fp.high) {
      f.schedule = "hetero-unfused-1D";
      unfused = true;
      f.reason = why + formatv(" > {0}: high OTB and MT, pick the schedule "
                               "least exposed to contention",
                               fp.high)
                           .str();
    } else {
      f.schedule = "hetero-fused-1D";
      f.reason =
          why +
          formatv(" in [{0}, {1}]: middle tranche", fp.low, fp.high).str();
    }
  } else {
    f.schedule = "uniform-fused-2D";
    f.reason = formatv("M={0} <= K={1}: 2D communication (sharded along K), "
                       "whose only schedule is uniform-fused-2D; modelled "
                       "as 1D transfers of the same size, as the seed "
                       "emulates it",
                       pb.m, pb.k)
                   .str();
  }

  // One step per rank: the communication granularity is one level finer
  // than the shard, i.e. M/R rows per step in total.
  int64_t blocks = std::max<int64_t>(1, pb.m / model.getAlignment());
  int64_t steps = std::max<int64_t>(1, std::min(pb.ranks, blocks));
  if (Error e = checkLimit("ficco: steps", steps, 1, kMaxTiles,
                           "a tile count (one step per rank)"))
    return std::move(e);
  Expected<std::vector<int64_t>> tiles =
      uniformTiles(pb.m, steps, model.getAlignment());
  if (!tiles)
    return tiles.takeError();
  Plan plan;
  plan.strategy = "ficco";
  plan.tiles = std::move(*tiles);
  // Unfused: one GEMM per received piece instead of one per step.
  plan.gemmCallsPerTile = unfused ? pb.ranks : 1;
  plan.ficco = std::move(f);
  if (Error e = finishPlan(model, plan))
    return std::move(e);
  return std::move(plan);
}

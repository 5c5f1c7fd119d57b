//===- Calibrate.h - Measure a GPU for a Planner profile -------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// CUDA part (OverlapCalibrationCuda). What overlap-calibrate measures:
//   - GEMM curves: overlap_gemm of m rows for each (N, K), C of the input
//     type; and, for the group size G being calibrated, the same GEMMs as
//     the tiles of reduce-scatter and all-gather run them: a strided batch
//     of G matrices of m/G rows sharing B (curves with batch G, x = m);
//   - communication curves over sizes (64 KiB .. max, and the sizes of
//     smallestRows rows of each (N, K)) for the four
//     collectives: a stand-in moving ringWireBytes of the size in one
//     process (copy-engine: device -> pinned host by cudaMemcpyAsync;
//     sm-copy: device -> device by a kernel of a bounded number of CTAs on
//     the comm stream, StandIn.h) or NCCL on the world at nccl-tests' size
//     (one process per GPU), with a per-call latency fitted from the
//     smallest sweep size up (fitCommLatency);
//   - contention factors: a mid-size GEMM and communication alone and at
//     the same time.
// Over several ranks every rank measures every point (each repetition counts
// as long as its slowest rank took).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_CALIBRATE_H
#define OVERLAP_CALIBRATION_CALIBRATE_H

#include "overlap/Calibration/MeasuringContext.h"
#include "overlap/Calibration/ProfileWriter.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace overlap {
namespace calibration {

struct CalibrateOptions {
  std::vector<std::pair<int64_t, int64_t>> nks;
  overlap_dtype dtype = OVERLAP_F16;
  /// The group the collective curves are for (and the batch of the batched
  /// GEMM curves).
  int64_t ranks = 8;
  bool nccl = false;
  /// The sm-copy leg: the copy kernel's CTAs; 0 on the other legs.
  int smCopyCtas = 0;
  int64_t maxM = 8192, step = 128, maxBytes = int64_t(256) << 20;
  /// The sweep's smallest M (scripts/gpu/run.sh's session shapes): the
  /// collective curves are also measured at this many rows of each (N, K),
  /// and each curve's per-call latency is fitted from there up
  /// (fitCommLatency).
  int64_t smallestRows = 128;
  int warmup = 5, iters = 20;
  /// Also measure the batched GEMM curves.
  bool batchedGemms = true;
  /// The profile's name, and device.comm_sms to record (the reservation
  /// the context was made with, when known; recorded when below the
  /// device's SMs).
  std::string name = "calibrated";
  std::optional<int64_t> commSms;
};

/// One measured point, for progress lines.
struct GemmPoint {
  int64_t n, k, batch, rows;
  double us;
};
struct CommPoint {
  planner::Collective collective;
  int64_t bytes;
  int64_t wire;
  double us;
};
struct CalibrateProgress {
  std::function<void(const GemmPoint &)> gemm;
  std::function<void(const CommPoint &)> comm;
};

/// Measures everything above on `ctx` (whose device is `device`) and
/// returns the profile's contents; `date` (YYYY-MM-DD) goes into its
/// description.
CalibrationResult calibrate(overlap_context *ctx, const DeviceInfo &device,
                            const CalibrateOptions &options,
                            const std::string &date,
                            const CalibrateProgress &progress);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_CALIBRATE_H

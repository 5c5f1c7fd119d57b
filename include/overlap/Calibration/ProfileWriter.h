//===- ProfileWriter.h - Measurements into a Planner profile ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// What overlap-calibrate measures, turned into a profile the Planner reads
// (docs/profiles.md): monotone tables of medians (a running maximum makes
// them nondecreasing, as the Planner requires), the device, contention
// factors; and the sizes it measures at. Pure C++ (OverlapCalibration); the
// measurement is Calibrate.h's.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_PROFILEWRITER_H
#define OVERLAP_CALIBRATION_PROFILEWRITER_H

#include "overlap/Planner/Profile.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace overlap {
namespace calibration {

/// Medians of GEMM calls versus their rows for one (N, K, dtype). With
/// batch G > 1, each call is a strided batch of G matrices of rows / G rows
/// sharing B (the tiles of reduce-scatter and all-gather); `rows` is then
/// the total, G x rows / G.
struct MeasuredGemm {
  int64_t n = 0, k = 0;
  planner::DType dtype = planner::DType::F16;
  int64_t batch = 1;
  std::vector<double> rows, us;
};

/// Medians of one collective versus its size (nccl-tests' size, bytes) over
/// `ranks` ranks.
struct MeasuredComm {
  planner::Collective collective = planner::Collective::AllReduce;
  int64_t ranks = 0;
  std::string note;
  std::vector<double> bytes, us;
  /// The per-call latency (fitCommLatency), written as latency_us; the
  /// written curve is the measured times less it, so the Planner's price
  /// at a measured size is still the measured time, and only the transfer
  /// part is scaled by the ring factor for other group sizes.
  double latencyUs = 0;
};

struct CalibrationResult {
  std::string name, description, provenance;
  std::string deviceName;
  int64_t smCount = 0;
  /// Written as device.comm_sms when known (the SMs the measuring context
  /// reserved for communication).
  std::optional<int64_t> commSms;
  /// Written as device.zero_sm_all_gather: true when the measuring context
  /// ran its all-gathers on the copy engines (the CUDA backend's
  /// zero_sm_all_gather on, no group fell back); absent otherwise.
  bool zeroSmAllGather = false;
  std::vector<MeasuredGemm> gemms;
  std::vector<MeasuredComm> comms;
  double computeContention = 1, commContention = 1;
};

/// [[x, y], ...] with y made nondecreasing by a running maximum.
llvm::json::Array monotoneTable(const std::vector<double> &x,
                                const std::vector<double> &y);

/// A stream's slowdown when both run: together / alone, at least 1.
double contentionFactor(double togetherUs, double aloneUs);

/// The profile's JSON text (two-space indent, a final newline). GEMM curves
/// of batch G > 1 carry "batch": G.
std::string profileJson(const CalibrationResult &result);

/// Parses profileJson(result) back with the Planner (batched curves
/// included); its error if the profile would not load.
llvm::Error checkProfileLoads(const CalibrationResult &result);

/// Rows a GEMM curve is measured at: step, 2 step, ... up to maxM, keeping
/// only multiples of `multipleOf` (a batched curve's rows divide by its
/// batch).
std::vector<int64_t> gemmCurveRows(int64_t step, int64_t maxM,
                                   int64_t multipleOf = 1);

/// Collective sizes: 64 KiB, doubling, up to maxBytes, and the sizes of
/// `extra` up to maxBytes (sweepCommSizes: the smallest tiles the sweep
/// prices), ascending, each once.
std::vector<int64_t> commCurveSizes(int64_t maxBytes,
                                    const std::vector<int64_t> &extra = {});

/// The sizes (nccl-tests' size, bytes) of `collective` at `rows` rows for
/// each (N, K) of `nks`: rows x N x elt for all-reduce and reduce-scatter,
/// rows x K x elt for all-gather, both for all-to-all (dispatch K,
/// combine N); ascending, each once. With rows = the sweep's smallest M
/// (128), the smallest collectives the Planner prices.
std::vector<int64_t>
sweepCommSizes(planner::Collective collective,
               const std::vector<std::pair<int64_t, int64_t>> &nks,
               int64_t rows, int64_t elementBytes);

/// A collective's per-call latency, fitted from its measured times: the
/// intercept of the least-squares line through the points with size in
/// [fromBytes, kLatencyFitSpan x fromBytes] (fromBytes: the smallest sweep
/// size, M = 128 rows), clamped to [0, the smallest time measured] so that
/// the curve less it stays nonnegative. 0 with fewer than two such points.
constexpr double kLatencyFitSpan = 8;
double fitCommLatency(const std::vector<double> &bytes,
                      const std::vector<double> &us, double fromBytes);

/// The bytes NCCL's `collective` of nccl-tests size `size` really moves:
/// whole elements, per rank for reduce-scatter, all-gather and all-to-all
/// (one block per peer).
int64_t ncclMovedBytes(planner::Collective collective, int64_t size,
                       int64_t elementBytes, int64_t ranks);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_PROFILEWRITER_H

//===- BenchSweep.h - What overlap-bench measures per shape ----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The host side of overlap-bench's sweep: its options, the plan of each
// shape (the Planner's tiles with its prediction, or uniform tiles, laid out
// by planner::TileLayout, or for a rank-major plan by
// planner::RankMajorLayout), the numbers measured per shape, the summary of
// a sweep and its CSV. Pure C++ (OverlapCalibration); BenchMeasure.h
// measures.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_BENCHSWEEP_H
#define OVERLAP_CALIBRATION_BENCHSWEEP_H

#include "overlap/Calibration/Arguments.h"
#include "overlap/Planner/CostModel.h"
#include "overlap/Planner/Defaults.h"
#include "overlap/Planner/Plan.h"
#include "overlap/Planner/Profile.h"
#include "overlap/Planner/RankMajor.h"
#include "overlap/Planner/TileLayout.h"
#include "overlap/Runtime/overlap_runtime.h"

#include "llvm/Support/Error.h"

#include <cmath>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace overlap {
namespace calibration {

/// Which forms of one tile's GEMM to time besides the runs (--tile-gemm):
/// G batched GEMMs of rows/G rows sharing B (what reduce-scatter and
/// all-gather tiles run), one contiguous GEMM of the tile's rows, or both.
enum class TileGemmMode { None, Batched, Contiguous, Both };

/// "batched", "contiguous" or "both".
std::optional<TileGemmMode> parseTileGemmMode(const std::string &text);

struct SweepOptions {
  std::vector<GemmShape> shapes;
  overlap_dtype dtype = OVERLAP_F16;
  std::string dtypeName = "f16";
  /// --leg: copy-engine, sm-copy or nccl (StandIn.h).
  std::string leg = "copy-engine";
  std::string strategy = ::overlap::planner::kDefaultStrategy;
  /// The group: --ranks on the stand-in legs (copy-engine, sm-copy), the
  /// world on the nccl leg.
  int64_t ranks = 8;
  /// Tiles of the overlapped variant without a profile (or when the
  /// profile's plan does not fit).
  int64_t uniformTiles = 4;
  /// --layout: the layout every overlapped variant must have (reduce-scatter
  /// and all-gather; rank-major refuses the other collectives' shapes);
  /// nullopt: the plan's (interleaved without a profile).
  std::optional<planner::TileOrder> layout;
  /// --chunks: the chunks of every block of a rank-major plan without a
  /// profile (or when the profile's plan does not fit): G x chunks tiles.
  int64_t rankMajorChunks = 1;
  int64_t rank = 0; ///< this process's rank (nccl leg), else 0
  int warmup = 5, iters = 20, inputSets = 3;
  std::optional<planner::Profile> profile;
  TileGemmMode tileGemm = TileGemmMode::None;
  /// Which exchange an all-to-all run times (--side): dispatch (the tokens
  /// before the experts' GEMM) or combine (its output after it).
  planner::AllToAllSide side = planner::AllToAllSide::Dispatch;

  /// The sm-copy leg's CTAs (smCopyCtas of the context's comm_sms), set
  /// once the measuring context exists; 0 on the other legs.
  int smCopyCtas = 0;

  bool nccl() const { return leg == "nccl"; }
  bool smCopy() const { return leg == "sm-copy"; }
};

/// The tiles a shape runs: `whole` (one tile: serial, and the GEMM and the
/// collective alone) and the overlapped variant's, `plan` (interleaved) or,
/// when set, `rankMajor` (then `plan` is `whole` and unused), with the
/// Planner's prediction (NaN without one) and, when the profile gave no
/// usable plan, why (`note`; the plan is then uniform).
struct ShapePlan {
  planner::TileLayout whole, plan;
  std::optional<planner::RankMajorLayout> rankMajor;
  double predictedUs = NAN;
  std::string note;

  planner::TileOrder layout() const {
    return rankMajor ? planner::TileOrder::RankMajor
                     : planner::TileOrder::Interleaved;
  }
  /// Tiles of the overlapped variant.
  size_t tiles() const { return rankMajor ? rankMajor->size() : plan.size(); }
};

/// The plan of shape `s` for collective `coll`: the Planner's (with
/// options.profile and options.strategy; a rank-major plan, from the
/// strategy rank-major or auto, runs rank-major), else options.uniformTiles
/// uniform tiles on the layout's grid, or with options.layout rank-major
/// options.rankMajorChunks uniform chunks of every block. A plan of another
/// layout than options.layout is set aside with a note (uniform tiles of
/// the forced layout run). Fails when the shape has no layout for the
/// collective over the group (M not a multiple of G; rank-major: not
/// reduce-scatter or all-gather, or one rank).
llvm::Expected<ShapePlan> planShape(const SweepOptions &options,
                                    planner::Collective coll,
                                    const GemmShape &s);

/// What one shape measured, in us (medians).
struct ShapeResult {
  planner::Collective coll = planner::Collective::AllReduce;
  GemmShape s{0, 0, 0};
  size_t bytes = 0; ///< the whole problem's collective (nccl-tests' size)
  size_t wire = 0;  ///< one rank's ring bytes for the whole problem
  size_t tiles = 0;
  /// The overlapped variant's layout.
  planner::TileOrder layout = planner::TileOrder::Interleaved;
  double gemm = 0, comm = 0, serial = 0, overlapped = 0, ideal = 0;
  double predicted = NAN;
  std::string check = "ok"; ///< "ok" or "FAIL ..."
  std::string planNote;
  /// --tile-gemm: the plan's first tile as G batched GEMMs of rows/G rows
  /// and as one contiguous GEMM of `tileRows` rows (NaN: not timed).
  int64_t tileRows = 0, tileBatch = 0;
  double tileBatchedUs = NAN, tileContiguousUs = NAN;

  double speedup() const { return serial / overlapped; }
  /// (serial - overlapped) / (serial - ideal).
  double eta() const;
  /// (predicted - overlapped) / overlapped; NaN without a prediction.
  double predictionError() const;
  bool failed() const { return check != "ok"; }
};

struct SweepSummary {
  double etaMedian = NAN, etaBest = NAN;
  size_t etaShapes = 0;
  double errorMedian = NAN, errorMax = NAN; ///< |prediction error|
  int failures = 0;
};

/// η over the shapes that have room to overlap (serial > ideal), the
/// |prediction error| over those with a prediction, the failed checks.
SweepSummary summarize(const std::vector<ShapeResult> &results);

/// The sweep's CSV: a `# runtime: ...` line, the header and one line per
/// row (`leg` and `ranks` from `options`, `layout` interleaved or
/// rank-major, `knobs` the CUDA backend's settings).
void writeSweepCsv(std::ostream &csv, const SweepOptions &options,
                   const std::string &runtime, const std::string &knobs,
                   const std::vector<ShapeResult> &rows);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_BENCHSWEEP_H

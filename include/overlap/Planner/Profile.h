//===- Profile.h - Hardware profiles for the Planner -----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// A profile describes one machine and link: fitted GEMM and collective cost
// curves, per-call latencies, contention and row alignment. Profiles are JSON
// files (see docs/profiles.md); every field is validated on load and a
// malformed file is reported with its name, the JSON path of the field and
// what was expected.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_PROFILE_H
#define OVERLAP_PLANNER_PROFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace overlap {
namespace planner {

/// Element types the Planner knows the width of.
enum class DType { F16, BF16, F32 };

std::optional<DType> parseDType(llvm::StringRef name);
llvm::StringRef toString(DType dtype);
/// Bytes per element.
unsigned byteWidth(DType dtype);

/// The collective that follows (all-reduce, reduce-scatter) or precedes
/// (all-gather) the matmul; all-to-all does either (MatmulProblem::side).
enum class Collective { AllReduce, ReduceScatter, AllGather, AllToAll };

std::optional<Collective> parseCollective(llvm::StringRef name);
llvm::StringRef toString(Collective collective);

/// The factor by which a ring algorithm's wire time grows with the group
/// size R, for a fixed buffer size: 2(R-1)/R for all-reduce, (R-1)/R for
/// reduce-scatter, all-gather and all-to-all (which sends all but the
/// local block of R). Used to rescale a curve measured at one group size to
/// another.
double ringFactor(Collective collective, int64_t ranks);

/// A nondecreasing function of one variable: either piecewise polynomials
/// over contiguous ranges (as the MC² seed fits them) or a table of points
/// interpolated linearly.
class Curve {
public:
  struct Piece {
    double from = 0;
    /// Upper end of the range; infinity for an open-ended last piece.
    double to = 0;
    /// Coefficients in ascending powers: c0 + c1*x + c2*x^2 + ...
    std::vector<double> coeffs;
  };

  static Curve piecewise(std::vector<Piece> pieces);
  static Curve table(std::vector<std::pair<double, double>> points);

  /// Value at x, never negative. Outside the covered range the nearest
  /// piece (or the nearest table segment) is extended.
  double eval(double x) const;

  llvm::ArrayRef<Piece> getPieces() const { return pieces; }
  llvm::ArrayRef<std::pair<double, double>> getPoints() const { return points; }

private:
  std::vector<Piece> pieces;
  std::vector<std::pair<double, double>> points;
};

/// GEMM time (µs) versus rows m for one (N, K, dtype, batch). With batch
/// G > 1 the call is a strided-batched GEMM of G matrices of m/G rows each
/// that share B (batch stride 0), as reduce-scatter and all-gather tiles
/// run; x is still the total rows m.
struct GemmCurve {
  int64_t n = 0;
  int64_t k = 0;
  DType dtype = DType::F16;
  int64_t batch = 1;
  Curve curve;
};

/// Collective time (µs) versus buffer size for one collective and group
/// size. The curve's x is bytes divided by `bytesPerUnit` (1 for "B",
/// 2^20 for "MiB", ...).
struct CommCurve {
  Collective collective = Collective::AllReduce;
  int64_t ranks = 0;
  double bytesPerUnit = 1;
  /// Added to every call on top of the curve.
  double latencyUs = 0;
  Curve curve;
};

struct DeviceInfo {
  std::string name;
  /// Streaming multiprocessors (or compute cores) available to one GEMM.
  std::optional<int64_t> smCount;
  /// SMs the collective occupies while it runs beside the GEMM.
  int64_t commSms = 0;
  /// All-gathers run on the copy engines (NCCL's zero-CTA policy on
  /// symmetric windows): they take no SMs, so an all-gather tile neither
  /// slows the GEMM beside it (no compute contention) nor leaves it fewer
  /// SMs per wave. Reduce-scatter and all-reduce are unaffected.
  bool zeroSmAllGather = false;
  /// GEMM output tile shape (rows, cols), for counting waves.
  std::optional<std::pair<int64_t, int64_t>> gemmTile;
  /// Peak dense FLOP/s per dtype (absent when unknown).
  std::optional<double> peakFlops[3];
  /// Memory bandwidth in bytes/s.
  std::optional<double> memoryBandwidth;

  std::optional<double> getPeakFlops(DType dtype) const {
    return peakFlops[static_cast<int>(dtype)];
  }
};

/// Thresholds of FiCCO's schedule heuristic (see docs/planner.md).
struct FiccoParams {
  double referenceUs = 1000.0;
  double low = 1.0;
  double high = 5.0;
};

struct Profile {
  std::string name;
  std::string description;
  std::string provenance;
  /// The file it was read from, or the name given to parseProfile.
  std::string source;

  DeviceInfo device;

  double gemmLatencyUs = 0;
  std::vector<GemmCurve> gemmCurves;
  /// Fraction of peak FLOP/s and bandwidth reached by the roofline
  /// fallback; absent when the profile has no roofline.
  std::optional<double> rooflineEfficiency;

  std::vector<CommCurve> commCurves;

  /// Slowdown of each stream while both run (>= 1).
  double computeContention = 1.15;
  double commContention = 1.15;
  /// Tile rows are multiples of this (except one tile taking M mod it).
  int64_t alignment = 128;

  FiccoParams ficco;

  /// The measured mean |prediction error| of each collective's plans, as a
  /// fraction ("prediction_error": {"reduce-scatter": 0.035, ...}), per
  /// collective (indexed by Collective); absent when not measured. `auto`
  /// keeps a split plan only when it is predicted faster than serial by
  /// more than this (getPredictionMargin).
  std::optional<double> predictionError[4];

  /// The margin `auto` requires of a split plan for `collective`: the
  /// profile's predictionError, else kDefaultPredictionMargin (Defaults.h).
  double getPredictionMargin(Collective collective) const;

  /// The GEMM curve for exactly (n, k, dtype, batch), or null.
  const GemmCurve *findGemmCurve(int64_t n, int64_t k, DType dtype,
                                 int64_t batch = 1) const;
  /// A measured curve to stand in for (n, k, dtype, batch) when there is no
  /// exact one, with the factor its times are scaled by, or a null curve.
  /// The curve of the same dtype and batch whose (N, K) is nearest in
  /// log-distance (|log N/Nc| + |log K/Kc|), its times scaled by the work
  /// per row (N K / Nc Kc); failing that, of another dtype whose peak and
  /// this dtype's peak the device gives (device.peak_tflops), scaled also by
  /// the peaks' ratio. A prediction from a neighbour, not a measurement.
  struct ScaledCurve {
    const GemmCurve *curve = nullptr;
    double scale = 1.0;
  };
  ScaledCurve findNearestGemmCurve(int64_t n, int64_t k, DType dtype,
                                   int64_t batch = 1) const;
  /// The curve for the collective whose group size is nearest to `ranks`
  /// (ties go to the larger group), or null when there is none.
  const CommCurve *findCommCurve(Collective collective, int64_t ranks) const;
};

/// Parses a profile from JSON text. Errors name `nameForErrors`, the JSON
/// path of the offending field and what was expected.
llvm::Expected<Profile> parseProfile(llvm::StringRef json,
                                     llvm::StringRef nameForErrors);

/// Reads and parses a profile file.
llvm::Expected<Profile> loadProfile(llvm::StringRef path);

/// Resolves a --profile argument: an existing path is used as is; a bare
/// name ("mc2-example") is looked up as `<profilesDir>/<name>.json`.
/// Returns the empty string when neither exists.
std::string resolveProfilePath(llvm::StringRef nameOrPath,
                               llvm::StringRef profilesDir);

/// The names of the profiles in `profilesDir` (their files' stems), sorted.
std::vector<std::string> shippedProfileNames(llvm::StringRef profilesDir);

/// Why `nameOrPath` resolves to no profile, as every tool says it after
/// its flag's name: "no file 'X' and no shipped profile of that name; did
/// you mean 'h200-measured'? (shipped: a, b, in DIR)".
std::string unknownProfileMessage(llvm::StringRef nameOrPath,
                                  llvm::StringRef profilesDir);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_PROFILE_H

//===- Defaults.h - The defaults every Overlap entry point shares -*- C++ -*-===//
//
// One place for the defaults that the passes, the pipelines, the driver, the
// tools, the C API and the Python package use: the profile the Planner
// prices plans with when none is named, the tiling strategy, and where the
// shipped profiles are found.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_DEFAULTS_H
#define OVERLAP_PLANNER_DEFAULTS_H

#include <string>

namespace overlap {
namespace planner {

/// The profile used when none is named: H100 SXM numbers from the data
/// sheet (profiles/h100-nvlink-datasheet.json).
inline constexpr const char kDefaultProfile[] = "h100-nvlink-datasheet";

/// The strategies planTiles takes, written once ("uniform:n" stands for all
/// n), as a string literal so that flag descriptions are made of it at
/// compile time (CompileOptions.def, OverlapPipelineOptions); the errors of
/// checkStrategy and strategyNames() (TilePlanner.h) are made of it too.
#define OVERLAP_STRATEGY_LIST "none, uniform:n, mc2, optimal, waves, ficco, rank-major, auto"

/// The tiling strategy used when none is named.
inline constexpr const char kDefaultStrategy[] = "auto";

/// The margin by which `auto` needs a split plan to beat serial (a fraction
/// of serial_us) when the profile has no "prediction_error" for the
/// collective: the mean |prediction error| measured on one H200 was 3.2 %
/// (docs/performance.md).
inline constexpr double kDefaultPredictionMargin = 0.03;

/// Fast-memory elements of the chain-fusion model (TEE-ACM2's M).
inline constexpr double kDefaultFastMemory = 49152;

/// The directory of the shipped profiles: $OVERLAP_PROFILES_DIR when set,
/// else `share/overlap/profiles` beside the directory of the binary that
/// holds the Planner (an executable in P/bin or a library in P/lib of an
/// install prefix P, or of the build directory, which mirrors that layout).
/// No source or build path is compiled in.
std::string shippedProfilesDir();

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_DEFAULTS_H

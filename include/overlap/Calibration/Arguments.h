//===- Arguments.h - Command lines of the measuring tools ------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// What overlap-bench and overlap-calibrate share to read their command
// lines besides the flag parser (flags::Args): comma lists of shapes, (N, K)
// pairs and collectives, element types, and the benchmark's default sweep. Pure
// C++ (OverlapCalibration), so it is tested where there is no GPU.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_ARGUMENTS_H
#define OVERLAP_CALIBRATION_ARGUMENTS_H

#include "overlap/Planner/Profile.h"
#include "overlap/Runtime/overlap_runtime.h"
#include "overlap/Support/Flags.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace overlap {
namespace calibration {

/// The tools' flag parser (overlap/Support/Flags.h): a table of flags
/// with their help, "--key value" options and switches.
using flags::Args;
using flags::readPositive;

/// Splits at commas; an empty item (",," or a trailing comma) is kept so
/// that the parsers reject it.
std::vector<std::string> splitList(const std::string &text);

struct GemmShape {
  int64_t m, n, k;
};

/// "MxNxK[,MxNxK...]", all positive; nullopt when malformed.
std::optional<std::vector<GemmShape>> parseGemmShapes(const std::string &text);

/// "NxK[,NxK...]", all positive; nullopt when malformed.
std::optional<std::vector<std::pair<int64_t, int64_t>>>
parseNkPairs(const std::string &text);

/// "all-reduce[,reduce-scatter[,all-gather]]" in any order, no repeats.
std::optional<std::vector<planner::Collective>>
parseCollectives(const std::string &text);

/// "f16", "bf16" or "f32".
std::optional<overlap_dtype> parseDtype(const std::string &name);

/// The Planner's name of an element type.
planner::DType plannerDtype(overlap_dtype dtype);

/// Bytes per element of f16, bf16 (2) and f32 (4).
size_t elementBytes(overlap_dtype dtype);

/// overlap-bench's default sweep: 24 shapes from compute- to comm-bound,
/// M in {1024, 2048, 4096, 8192} x the (N, K) pairs of defaultNkPairs.
std::vector<GemmShape> defaultShapes();

/// The (N, K) pairs of that sweep, overlap-calibrate's default GEMM curves.
std::vector<std::pair<int64_t, int64_t>> defaultNkPairs();

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_ARGUMENTS_H

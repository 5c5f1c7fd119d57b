//===- Arguments.h - Command lines of the measuring tools ------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// What overlap-bench and overlap-calibrate share to read their command
// lines: "--key value" options, comma lists of shapes, (N, K) pairs and
// collectives, element types, and the benchmark's default sweep. Pure C++
// (OverlapCalibration), so it is tested where there is no GPU.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_ARGUMENTS_H
#define OVERLAP_CALIBRATION_ARGUMENTS_H

#include "overlap/Planner/Profile.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace overlap {
namespace calibration {

/// "--key value" options and "--flag" switches. Reading a malformed value
/// records an error (the first one is kept) and returns the default, so
/// that a tool reads all its options, then checks error() once.
class Args {
public:
  /// Returns false, with error() saying why, on an unknown option or an
  /// option without its value.
  bool parse(int argc, const char *const *argv,
             const std::vector<std::string> &valued,
             const std::vector<std::string> &flags);
  bool has(const std::string &key) const { return values.count(key) != 0; }
  std::string get(const std::string &key, const std::string &def) const;
  /// A positive integer, or `def` when absent.
  int64_t getInt(const std::string &key, int64_t def) const;
  /// The first error of parse or a getter ("" if none): one line naming
  /// the option.
  const std::string &error() const { return firstError; }
  /// Records `message` as the error unless one is already recorded.
  void fail(const std::string &message) const;

private:
  std::map<std::string, std::string> values;
  mutable std::string firstError;
};

/// Reads a positive decimal integer at `text[pos]` and advances `pos`.
/// Rejects signs, empty digits and values that do not fit 2^62 (so that
/// products of a few of them are still checked for overflow by the callers).
bool readPositive(const std::string &text, size_t &pos, int64_t &out);

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

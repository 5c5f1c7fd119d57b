//===- Compare.h - Compare outputs and report them --------------*- C++ -*-===//
//
// What overlap-run and overlap-exec print once the outputs of a run are in
// host memory: the per-element comparison of a program against a
// reference, its verdict, checksums of one run, timing helpers. No MLIR and
// no LLVM, like Run.h.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LOADER_COMPARE_H
#define OVERLAP_LOADER_COMPARE_H

#include "overlap/Loader/Run.h"

#include <string>
#include <string_view>
#include <vector>

namespace overlap {
namespace run {

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

/// The comparison of two runs of the same signature.
struct Comparison {
  /// One line per output (and one more per output that differs).
  std::string text;
  bool ok = true;
  bool bitIdentical = true;
  /// Elements where either side is NaN (bit-identical NaNs still differ).
  int64_t nans = 0;
};

/// Compares every output of every rank of `got` (the program) against
/// `want` (the reference), both indexed [rank][output] in outputViews'
/// order: an element matches when |got - want| <= atol + rtol * |want|, and
/// a NaN never matches. `gotName`/`wantName` name the two in the first
/// mismatch's line ("overlap"/"reference", "program"/"reference").
/// Arguments that are not `inout` are inputs only: where they differ, the
/// text says so and which program wrote into which (against the inputs
/// both runs were given, made again from `seed`), and the comparison still
/// holds.
Comparison compareOutputs(const Signature &sig,
                          const std::vector<std::vector<OutputView>> &got,
                          const std::vector<std::vector<OutputView>> &want,
                          const Tolerance &tolerance, std::string_view gotName,
                          std::string_view wantName, uint64_t seed);

/// "bit-identical: yes|no" and "OK" or "MISMATCH", one per line.
std::string verdict(const Comparison &comparison);

/// One line per output with checksums over all ranks (rank order, then
/// row-major): the sum of the values, the number of NaNs, and the FNV-1a
/// hash of the bits.
std::string checksums(const Signature &sig,
                      const std::vector<std::vector<OutputView>> &outputs);

/// "%.Nf"-style formatting without iostreams.
std::string formatDouble(const char *format, double value);

/// The median of `values` (0 when empty).
double median(std::vector<double> values);

} // namespace run
} // namespace overlap

#endif // OVERLAP_LOADER_COMPARE_H

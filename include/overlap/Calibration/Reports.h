//===- Reports.h - What ranks tell each other after a step -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The fixed-size report each rank of a multi-process measurement sends the
// others (one all-gather) after a step: its argument fingerprint, its
// failure, its timings; and what rank 0 makes of them: the slowest rank's
// time per run, who failed, who was started differently. Pure C++
// (OverlapCalibration); the exchange itself is MeasuringContext.h's.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_REPORTS_H
#define OVERLAP_CALIBRATION_REPORTS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace overlap {
namespace calibration {

/// Who sent it, the fingerprint of its arguments, a message (why it
/// failed, "" if it did not; in the argument check, its command line) and
/// numbers (timings). Encoded to a fixed size for a given count of numbers,
/// so that an all-gather of equal counts moves whole records.
struct RankReport {
  int32_t rank = 0;
  uint64_t fingerprint = 0;
  std::string message;
  std::vector<double> values;
};

/// Bytes of a message in a report; longer ones are cut.
constexpr size_t reportMessageBytes = 256;

/// Bytes of an encoded report with `count` numbers: a multiple of 8.
size_t reportBytes(size_t count);

std::vector<char> encodeReport(const RankReport &report);

/// False (with the reason) unless `bytes` is one whole report.
bool decodeReport(const char *bytes, size_t size, RankReport &report,
                  std::string &why);

/// The slowest rank's value of every run: element-wise maximum over the
/// reports (a collective step ends when its last rank does). NaN wins, so
/// that a rank without a measurement is not hidden. Empty if the reports
/// disagree on the count.
std::vector<double> maxOverRanks(const std::vector<RankReport> &reports);

/// "" if no rank failed (sent a message); else the first failing rank's
/// reason, prefixed by its rank when there are several ranks, and how many
/// others failed.
std::string describeFailures(const std::vector<RankReport> &reports);

/// FNV-1a of the arguments that decide what a rank does (everything but
/// `ignored` options and their values, e.g. the output files only rank 0
/// writes) and of `extra` (e.g. a profile's text): ranks that must issue the
/// same collectives in the same order must have equal fingerprints.
uint64_t argumentFingerprint(const std::vector<std::string> &args,
                             const std::vector<std::string> &ignored,
                             const std::string &extra);

/// The ranks whose fingerprint differs from rank 0's (the first report).
std::vector<int32_t> mismatchedRanks(const std::vector<RankReport> &reports);

/// The median (the mean of the middle two for an even count); 0 if empty.
double median(std::vector<double> values);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_REPORTS_H

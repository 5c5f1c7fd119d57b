//===- Reports.cpp - What ranks tell each other after a step ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/Reports.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace overlap::calibration;

static constexpr uint32_t reportMagic = 0x5242564f; // "OVBR"

size_t overlap::calibration::reportBytes(size_t count) {
  return 24 + reportMessageBytes + 8 * count;
}

std::vector<char> overlap::calibration::encodeReport(const RankReport &report) {
  std::vector<char> out(reportBytes(report.values.size()), 0);
  uint32_t magic = reportMagic, count = uint32_t(report.values.size()),
           hasMessage = report.message.empty() ? 0 : 1;
  std::memcpy(&out[0], &magic, 4);
  std::memcpy(&out[4], &report.rank, 4);
  std::memcpy(&out[8], &count, 4);
  std::memcpy(&out[12], &hasMessage, 4);
  std::memcpy(&out[16], &report.fingerprint, 8);
  std::memcpy(&out[24], report.message.data(),
              std::min(report.message.size(), reportMessageBytes - 1));
  if (count)
    std::memcpy(&out[24 + reportMessageBytes], report.values.data(),
                8 * size_t(count));
  return out;
}

bool overlap::calibration::decodeReport(const char *bytes, size_t size,
                                        RankReport &report, std::string &why) {
  uint32_t magic = 0, count = 0, hasMessage = 0;
  if (size < reportBytes(0)) {
    why = "a report of " + std::to_string(size) + " bytes is truncated";
    return false;
  }
  std::memcpy(&magic, bytes, 4);
  std::memcpy(&report.rank, bytes + 4, 4);
  std::memcpy(&count, bytes + 8, 4);
  std::memcpy(&hasMessage, bytes + 12, 4);
  std::memcpy(&report.fingerprint, bytes + 16, 8);
  if (magic != reportMagic) {
    why = "not a report (bad magic)";
    return false;
  }
  if (size != reportBytes(count)) {
    why = "a report of " + std::to_string(count) + " numbers in " +
          std::to_string(size) + " bytes";
    return false;
  }
  const char *message = bytes + 24;
  report.message.assign(message, strnlen(message, reportMessageBytes - 1));
  if (hasMessage && report.message.empty())
    report.message = "(an empty message)";
  report.values.resize(count);
  if (count)
    std::memcpy(report.values.data(), bytes + 24 + reportMessageBytes,
                8 * size_t(count));
  return true;
}

std::vector<double>
overlap::calibration::maxOverRanks(const std::vector<RankReport> &reports) {
  if (reports.empty())
    return {};
  std::vector<double> out = reports[0].values;
  for (const RankReport &r : reports) {
    if (r.values.size() != out.size())
      return {};
    for (size_t i = 0; i < out.size(); ++i)
      if (std::isnan(r.values[i]) || r.values[i] > out[i])
        out[i] = r.values[i];
  }
  return out;
}

std::string
overlap::calibration::describeFailures(const std::vector<RankReport> &reports) {
  std::string first;
  size_t failed = 0;
  for (const RankReport &r : reports) {
    if (r.message.empty())
      continue;
    if (failed++ == 0)
      first = reports.size() == 1
                  ? r.message
                  : "rank " + std::to_string(r.rank) + ": " + r.message;
  }
  if (failed > 1)
    first += " (and " + std::to_string(failed - 1) + " more rank" +
             (failed > 2 ? "s" : "") + ")";
  return first;
}

uint64_t overlap::calibration::argumentFingerprint(
    const std::vector<std::string> &args,
    const std::vector<std::string> &ignored, const std::string &extra) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto add = [&](const std::string &text) {
    for (unsigned char c : text)
      h = (h ^ c) * 0x100000001b3ULL;
    h = (h ^ 0xff) * 0x100000001b3ULL; // separator: "ab","c" != "a","bc"
  };
  for (size_t i = 0; i < args.size(); ++i) {
    if (std::find(ignored.begin(), ignored.end(), args[i]) != ignored.end()) {
      ++i;
      continue;
    }
    add(args[i]);
  }
  add(extra);
  return h;
}

std::vector<int32_t>
overlap::calibration::mismatchedRanks(const std::vector<RankReport> &reports) {
  std::vector<int32_t> out;
  for (const RankReport &r : reports)
    if (r.fingerprint != reports.front().fingerprint)
      out.push_back(r.rank);
  return out;
}

double overlap::calibration::median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t h = values.size() / 2;
  return values.size() % 2 ? values[h] : 0.5 * (values[h - 1] + values[h]);
}

//===- ProfileWriter.cpp - Measurements into a Planner profile -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/ProfileWriter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>

using namespace llvm;
using namespace overlap;
using namespace overlap::calibration;

json::Array calibration::monotoneTable(const std::vector<double> &x,
                                       const std::vector<double> &y) {
  json::Array table;
  double top = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    top = std::max(top, y[i]);
    table.push_back(json::Array{x[i], top});
  }
  return table;
}

double calibration::contentionFactor(double togetherUs, double aloneUs) {
  return aloneUs > 0 ? std::max(1.0, togetherUs / aloneUs) : 1.0;
}

std::string calibration::profileJson(const CalibrationResult &r) {
  json::Array gemmCurves;
  for (const MeasuredGemm &g : r.gemms) {
    json::Object curve{
        {"n", g.n},
        {"k", g.k},
        {"dtype", planner::toString(g.dtype)},
        {"curve", json::Object{{"table", monotoneTable(g.rows, g.us)}}}};
    if (g.batch > 1)
      curve["batch"] = g.batch;
    gemmCurves.push_back(std::move(curve));
  }
  json::Object collectives;
  for (const MeasuredComm &c : r.comms) {
    json::Value *list = collectives.get(planner::toString(c.collective));
    if (!list)
      list = &(collectives[planner::toString(c.collective)] = json::Array{});
    std::vector<double> transfer = c.us;
    for (double &t : transfer)
      t = std::max(0.0, t - c.latencyUs);
    list->getAsArray()->push_back(json::Object{
        {"ranks", c.ranks},
        {"x_unit", "B"},
        {"latency_us", c.latencyUs},
        {"note", c.note},
        {"curve", json::Object{{"table", monotoneTable(c.bytes, transfer)}}}});
  }
  json::Object device{{"name", r.deviceName}, {"sm_count", r.smCount}};
  if (r.commSms)
    device["comm_sms"] = *r.commSms;
  if (r.zeroSmAllGather)
    device["zero_sm_all_gather"] = true;
  json::Object profile{
      {"name", r.name},
      {"description", r.description},
      {"provenance", r.provenance},
      {"device", std::move(device)},
      {"gemm", json::Object{{"curves", std::move(gemmCurves)}}},
      {"collectives", std::move(collectives)},
      {"contention", json::Object{{"compute", r.computeContention},
                                  {"comm", r.commContention}}}};
  std::string text;
  raw_string_ostream os(text);
  os << formatv("{0:2}", json::Value(std::move(profile))) << "\n";
  os.flush();
  return text;
}

Error calibration::checkProfileLoads(const CalibrationResult &result) {
  Expected<planner::Profile> profile =
      planner::parseProfile(profileJson(result), result.name);
  return profile ? Error::success() : profile.takeError();
}

std::vector<int64_t> calibration::gemmCurveRows(int64_t step, int64_t maxM,
                                                int64_t multipleOf) {
  std::vector<int64_t> rows;
  if (step <= 0 || multipleOf <= 0)
    return rows;
  for (int64_t m = step; m <= maxM; m += step)
    if (m % multipleOf == 0)
      rows.push_back(m);
  return rows;
}

std::vector<int64_t>
calibration::commCurveSizes(int64_t maxBytes,
                            const std::vector<int64_t> &extra) {
  std::vector<int64_t> sizes;
  for (int64_t size = 64 << 10; size <= maxBytes; size *= 2)
    sizes.push_back(size);
  for (int64_t size : extra)
    if (size > 0 && size <= maxBytes)
      sizes.push_back(size);
  llvm::sort(sizes);
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<int64_t>
calibration::sweepCommSizes(planner::Collective collective,
                            const std::vector<std::pair<int64_t, int64_t>> &nks,
                            int64_t rows, int64_t elementBytes) {
  std::vector<int64_t> sizes;
  for (auto [n, k] : nks) {
    if (collective != planner::Collective::AllGather)
      sizes.push_back(rows * n * elementBytes);
    if (collective == planner::Collective::AllGather ||
        collective == planner::Collective::AllToAll)
      sizes.push_back(rows * k * elementBytes);
  }
  llvm::sort(sizes);
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

double calibration::fitCommLatency(const std::vector<double> &bytes,
                                   const std::vector<double> &us,
                                   double fromBytes) {
  const double toBytes = fromBytes * kLatencyFitSpan;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  double smallest = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < bytes.size() && i < us.size(); ++i) {
    smallest = std::min(smallest, us[i]);
    if (bytes[i] < fromBytes || bytes[i] > toBytes)
      continue;
    // x in MiB keeps the sums well conditioned.
    const double x = bytes[i] / double(1 << 20);
    n += 1;
    sx += x;
    sy += us[i];
    sxx += x * x;
    sxy += x * us[i];
  }
  const double det = n * sxx - sx * sx;
  if (n < 2 || det <= 0)
    return 0;
  const double intercept = (sy * sxx - sx * sxy) / det;
  return std::clamp(intercept, 0.0, smallest);
}

int64_t calibration::ncclMovedBytes(planner::Collective collective,
                                    int64_t size, int64_t elementBytes,
                                    int64_t ranks) {
  const int64_t unit =
      elementBytes * (collective == planner::Collective::AllReduce ? 1 : ranks);
  return size / unit * unit;
}

//===- Arguments.cpp - Command lines of the measuring tools ----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/Arguments.h"

#include <algorithm>

using namespace overlap;
using namespace overlap::calibration;

std::vector<std::string> calibration::splitList(const std::string &text) {
  return flags::split(text, ',');
}

/// Reads "AxB[xC...]" of `count` positive integers; false when malformed.
static bool readDims(const std::string &item, int64_t *dims, int count) {
  size_t pos = 0;
  for (int d = 0; d < count; ++d) {
    if (d > 0 && (pos >= item.size() || item[pos++] != 'x'))
      return false;
    if (!readPositive(item, pos, dims[d]))
      return false;
  }
  return pos == item.size();
}

std::optional<std::vector<GemmShape>>
calibration::parseGemmShapes(const std::string &text) {
  std::vector<GemmShape> shapes;
  for (const std::string &item : splitList(text)) {
    int64_t d[3];
    if (!readDims(item, d, 3))
      return std::nullopt;
    shapes.push_back({d[0], d[1], d[2]});
  }
  return shapes;
}

std::optional<std::vector<std::pair<int64_t, int64_t>>>
calibration::parseNkPairs(const std::string &text) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const std::string &item : splitList(text)) {
    int64_t d[2];
    if (!readDims(item, d, 2))
      return std::nullopt;
    pairs.push_back({d[0], d[1]});
  }
  return pairs;
}

std::optional<std::vector<planner::Collective>>
calibration::parseCollectives(const std::string &text) {
  std::vector<planner::Collective> out;
  for (const std::string &item : splitList(text)) {
    std::optional<planner::Collective> c = planner::parseCollective(item);
    if (!c || std::find(out.begin(), out.end(), *c) != out.end())
      return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

std::optional<overlap_dtype> calibration::parseDtype(const std::string &name) {
  if (name == "f16")
    return OVERLAP_F16;
  if (name == "bf16")
    return OVERLAP_BF16;
  if (name == "f32")
    return OVERLAP_F32;
  return std::nullopt;
}

planner::DType calibration::plannerDtype(overlap_dtype dtype) {
  return dtype == OVERLAP_F16    ? planner::DType::F16
         : dtype == OVERLAP_BF16 ? planner::DType::BF16
                                 : planner::DType::F32;
}

size_t calibration::elementBytes(overlap_dtype dtype) {
  return dtype == OVERLAP_F32 ? 4 : 2;
}

std::vector<std::pair<int64_t, int64_t>> calibration::defaultNkPairs() {
  return {{8192, 3072},  {4096, 1024}, {8192, 8192},
          {4096, 16384}, {8192, 1024}, {2048, 12288}};
}

std::vector<GemmShape> calibration::defaultShapes() {
  std::vector<GemmShape> shapes;
  for (int64_t m : {1024, 2048, 4096, 8192})
    for (auto [n, k] : defaultNkPairs())
      shapes.push_back({m, n, k});
  return shapes;
}

//===- PackBlocks.cpp - The pack benchmark's blocks ------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/PackBlocks.h"

#include "overlap/Calibration/Arguments.h"

#include <algorithm>
#include <cstring>

using namespace overlap::calibration;

bool overlap::calibration::validPackBlock(const PackBlock &b,
                                          std::string &why) {
  if (b.rows <= 0 || b.rowBytes <= 0 || b.strideBytes <= 0 || b.elemBytes <= 0)
    why = "sizes must be positive";
  else if (b.rowBytes % b.elemBytes || b.strideBytes % b.elemBytes)
    why = "the element size must divide the row and the stride";
  else if (b.strideBytes < b.rowBytes)
    why = "the stride is shorter than the row";
  else if (b.rows > (int64_t(1) << 40) / b.strideBytes)
    why = "the block spans more than 2^40 bytes";
  else
    return true;
  return false;
}

int64_t overlap::calibration::defaultElemBytes(int64_t rowBytes) {
  return rowBytes % 4 == 0 ? 4 : rowBytes % 2 == 0 ? 2 : 1;
}

std::optional<std::vector<PackBlock>>
overlap::calibration::parsePackBlocks(const std::string &text,
                                      int64_t totalBytes, std::string &why) {
  std::vector<PackBlock> blocks;
  for (const std::string &item : splitList(text)) {
    PackBlock b;
    size_t pos = 0;
    int64_t first = 0;
    bool ok = readPositive(item, pos, first);
    if (ok && pos < item.size() && item[pos] == 'x') {
      ++pos;
      b.rows = first;
      ok = readPositive(item, pos, b.rowBytes);
    } else {
      b.rowBytes = first;
    }
    b.strideBytes = 2 * b.rowBytes;
    b.elemBytes = defaultElemBytes(b.rowBytes);
    if (ok && pos < item.size() && item[pos] == '@') {
      ++pos;
      ok = readPositive(item, pos, b.strideBytes);
    }
    if (ok && pos < item.size() && item[pos] == ':') {
      ++pos;
      ok = readPositive(item, pos, b.elemBytes);
    }
    if (!ok || pos != item.size()) {
      why = "'" + item + "' is not [ROWSx]ROWBYTES[@STRIDE][:ELEM]";
      return std::nullopt;
    }
    if (b.rows == 0)
      b.rows = std::max<int64_t>(1, totalBytes / b.rowBytes);
    if (!validPackBlock(b, why)) {
      why = "'" + item + "': " + why;
      return std::nullopt;
    }
    blocks.push_back(b);
  }
  return blocks;
}

std::vector<PackBlock>
overlap::calibration::defaultPackBlocks(int64_t totalBytes) {
  std::vector<PackBlock> blocks;
  auto add = [&](int64_t row, int64_t stride, int64_t elem) {
    blocks.push_back(
        {std::max<int64_t>(1, totalBytes / row), row, stride, elem});
  };
  for (int64_t row = 2; row <= 16384; row *= 2) {
    add(row, 2 * row, 2);
    if (row >= 4)
      add(row, 2 * row, 4);
  }
  add(3, 6, 1);
  add(6, 12, 2);
  add(12, 24, 4);
  add(24, 48, 8);
  add(1000, 2000, 4);
  add(4096, 4097, 1);
  add(16384, 16386, 2);
  add(16384, 32768, 16);
  return blocks;
}

int overlap::calibration::packAccessBytes(const PackBlock &b) {
  uint64_t bits = uint64_t(b.rowBytes);
  if (b.rows > 1)
    bits |= uint64_t(b.strideBytes);
  for (int w = 16; w > 1; w /= 2)
    if (bits % uint64_t(w) == 0)
      return w;
  return 1;
}

double overlap::calibration::packGbps(const PackBlock &b, double us) {
  return double(b.bytes()) / (us * 1e3);
}

void overlap::calibration::hostPack(const PackBlock &b, const char *strided,
                                    char *packed) {
  for (int64_t r = 0; r < b.rows; ++r)
    std::memcpy(packed + r * b.rowBytes, strided + r * b.strideBytes,
                size_t(b.rowBytes));
}

void overlap::calibration::hostUnpack(const PackBlock &b, const char *packed,
                                      char *strided) {
  for (int64_t r = 0; r < b.rows; ++r)
    std::memcpy(strided + r * b.strideBytes, packed + r * b.rowBytes,
                size_t(b.rowBytes));
}

//===- TileLayout.cpp - Where the rows of each tile are --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/TileLayout.h"

#include "overlap/Planner/Plan.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cassert>
#include <cstring>

using namespace llvm;
using namespace overlap::planner;

static Error badLayout(const Twine &msg) {
  return createStringError(std::errc::invalid_argument, "%s",
                           msg.str().c_str());
}

int64_t overlap::planner::layoutSlots(Collective collective, int64_t group) {
  return collective == Collective::AllReduce ? 1 : group;
}

Expected<TileLayout> TileLayout::create(Collective collective, int64_t m,
                                        int64_t group,
                                        ArrayRef<int64_t> tiles) {
  if (m <= 0 || group <= 0 || tiles.empty())
    return badLayout("M, the group and the tile count must be positive");
  TileLayout l;
  l.collective = collective;
  l.m = m;
  l.numSlots = layoutSlots(collective, group);
  if (m % l.numSlots)
    return badLayout("M (" + Twine(m) + ") is not a multiple of the group (" +
                     Twine(group) + ")");
  int64_t off = 0;
  for (int64_t rows : tiles) {
    if (rows <= 0 || rows % l.numSlots)
      return badLayout("tile of " + Twine(rows) +
                       " rows is not a positive multiple of the group (" +
                       Twine(l.numSlots) + ")");
    // Checked before adding, so that the sum never passes M (or int64).
    if (rows > m - off)
      return badLayout("tiles sum to more than M = " + Twine(m));
    l.spans.push_back({off, rows, off / l.numSlots, rows / l.numSlots});
    off += rows;
  }
  if (off != m)
    return badLayout("tiles sum to " + Twine(off) + ", not M = " + Twine(m));
  return std::move(l);
}

TileLayout::Location TileLayout::locate(int64_t row) const {
  assert(row >= 0 && row < m && "a row of the full product");
  int64_t slot = row / blockSize(), inBlock = row % blockSize();
  // The spans' block offsets ascend: the last one starting at or before
  // the row holds it.
  auto after = std::upper_bound(
      spans.begin(), spans.end(), inBlock,
      [](int64_t r, const TileSpan &s) { return r < s.blockOffset; });
  size_t t = size_t(after - spans.begin()) - 1;
  return {t, slot, inBlock - spans[t].blockOffset};
}

void overlap::planner::arrangeRows(const TileLayout &layout, const char *src,
                                   size_t rowBytes, char *dst) {
  for (size_t t = 0; t < layout.size(); ++t)
    for (int64_t slot = 0; slot < layout.slots(); ++slot)
      std::memcpy(dst + size_t(layout.packedRow(t, slot, 0)) * rowBytes,
                  src + size_t(layout.globalRow(t, slot, 0)) * rowBytes,
                  size_t(layout[t].blockRows) * rowBytes);
}

Expected<std::vector<int64_t>>
overlap::planner::uniformTiles(Collective collective, int64_t m, int64_t group,
                               int64_t count) {
  if (m <= 0 || group <= 0 || count <= 0)
    return badLayout("uniform tiles need a positive M, group and count, got "
                     "M = " +
                     Twine(m) + ", group " + Twine(group) + ", count " +
                     Twine(count));
  const int64_t slots = layoutSlots(collective, group);
  if (m % slots)
    return badLayout("M (" + Twine(m) + ") is not a multiple of the group (" +
                     Twine(group) + ")");
  return uniformTiles(m, std::min(count, m / slots), slots);
}

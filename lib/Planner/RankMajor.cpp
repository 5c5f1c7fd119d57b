//===- RankMajor.cpp - The rank-major tiles of RS and AG -------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Planner/RankMajor.h"

#include "overlap/Planner/Limits.h"

#include "llvm/ADT/Twine.h"

#include <cassert>

using namespace llvm;
using namespace overlap::planner;

static Error badLayout(const Twine &msg) {
  return createStringError(std::errc::invalid_argument, "rank-major: %s",
                           msg.str().c_str());
}

Expected<RankMajorLayout>
RankMajorLayout::create(Collective collective, int64_t m, int64_t group,
                        ArrayRef<int64_t> chunks) {
  if (collective != Collective::ReduceScatter &&
      collective != Collective::AllGather)
    return badLayout("only reduce-scatter and all-gather have rank-major "
                     "tiles, not " +
                     toString(collective));
  if (group < 2 || group > kMaxRanks)
    return badLayout("needs a group of 2 to " + Twine(kMaxRanks) +
                     " ranks, got " + Twine(group));
  if (m <= 0 || m % group != 0)
    return badLayout("M (" + Twine(m) + ") must be a positive multiple of " +
                     "the group (" + Twine(group) + ")");
  if (chunks.empty())
    return badLayout("no chunks");
  if (static_cast<int64_t>(chunks.size()) > kMaxTiles / group)
    return badLayout(Twine(chunks.size()) + " chunks of " + Twine(group) +
                     " blocks are more than " + Twine(kMaxTiles) + " tiles");
  const int64_t block = m / group;
  int64_t sum = 0;
  for (int64_t c : chunks) {
    if (c <= 0)
      return badLayout("a chunk of " + Twine(c) + " rows (chunks are "
                       "positive)");
    // Checked before adding, so that the sum never passes M/G (or int64).
    if (c > block - sum)
      return badLayout("chunks sum to more than a block's M/G = " +
                       Twine(block) + " rows");
    sum += c;
  }
  if (sum != block)
    return badLayout("chunks sum to " + Twine(sum) + ", not a block's M/G = " +
                     Twine(block) + " rows");

  RankMajorLayout l;
  l.collective = collective;
  l.m = m;
  l.group = group;
  l.chunks.assign(chunks.begin(), chunks.end());
  // Reduce-scatter: steps 1..G-1, then 0 (the own block, while the last
  // partials travel); all-gather: 0 (the local rows, while the first
  // chunks arrive), then 1..G-1.
  for (int64_t i = 0; i < group; ++i) {
    int64_t step = collective == Collective::ReduceScatter ? (i + 1) % group
                                                           : i;
    int64_t offset = 0;
    for (size_t c = 0; c < chunks.size(); ++c) {
      l.tiles.push_back({step, static_cast<int64_t>(c), offset, chunks[c]});
      offset += chunks[c];
    }
  }
  return std::move(l);
}

std::vector<int64_t> RankMajorLayout::tileRows() const {
  std::vector<int64_t> rows;
  rows.reserve(tiles.size());
  for (const RankMajorTile &t : tiles)
    rows.push_back(t.rows);
  return rows;
}

int64_t RankMajorLayout::shift(size_t t) const {
  int64_t s = tiles[t].step;
  return collective == Collective::ReduceScatter ? s : -s;
}

static int64_t mod(int64_t a, int64_t g) { return ((a % g) + g) % g; }

int64_t RankMajorLayout::sendPeer(size_t t, int64_t rank) const {
  return mod(rank + shift(t), group);
}

int64_t RankMajorLayout::recvPeer(size_t t, int64_t rank) const {
  return mod(rank - shift(t), group);
}

int64_t RankMajorLayout::block(size_t t, int64_t rank) const {
  return mod(rank + tiles[t].step, group);
}

int64_t RankMajorLayout::globalRow(size_t t, int64_t rank) const {
  return block(t, rank) * blockSize() + tiles[t].chunkOffset;
}

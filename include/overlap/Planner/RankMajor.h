//===- RankMajor.h - The rank-major tiles of RS and AG ----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The one rule of the rank-major decomposition of a fused matmul +
// reduce-scatter or all-gather (PyTorch's async-TP, Flux, Transformer
// Engine), the other layout a plan may have (Plan::layout; TileLayout.h is
// the interleaved one). The M rows of the full product (A's rows for
// reduce-scatter, C's rows for all-gather) are G blocks of M/G rows, block j
// belonging to group rank j. Every block is cut into the same chunks
// c_1..c_k (summing to M/G). A tile is one chunk of one block: ONE
// contiguous GEMM of c rows, exchanged point to point by a shift (on step s
// every rank r sends to (r + shift) mod G and receives from
// (r - shift) mod G).
//
//   reduce-scatter, rank r: steps s = 1, 2, ..., G-1, then s = 0. On step s,
//     chunk c: the GEMM of A's rows of block (r+s) mod G, chunk c, gives a
//     partial P; P is shifted by +s (rank (r+s) mod G, the block's owner,
//     receives it; rank r receives rank (r-s) mod G's partial of its own
//     block r). Step 0 (own block) has no exchange. At the end each chunk of
//     rank r's result is its own partial plus the G-1 received ones: an
//     elementwise sum on the compute stream after the last exchange.
//   all-gather, rank r: steps s = 0, 1, ..., G-1. Step 0: the GEMM of the
//     local rows (block r, no exchange). Step s >= 1, chunk c: every rank
//     shifts its local chunk c by -s, so rank r receives block (r+s) mod G's
//     chunk c from its owner, rank (r+s) mod G, then computes C's rows of
//     that block, chunk c (contiguous).
//
// The tiles in execution order are G x k entries: the steps in the order
// above, and within a step the k chunks in order. Plan::tiles lists their
// rows (chunk rows, summing to M); Plan::chunks is the cut of one block.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_RANKMAJOR_H
#define OVERLAP_PLANNER_RANKMAJOR_H

#include "overlap/Planner/Profile.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace overlap {
namespace planner {

/// One tile of the rank-major decomposition, the same on every rank.
struct RankMajorTile {
  int64_t step = 0;        ///< s (reduce-scatter 1..G-1 then 0; AG 0..G-1)
  int64_t chunk = 0;       ///< index of the chunk in the block, 0..k-1
  int64_t chunkOffset = 0; ///< first row of the chunk within a block
  int64_t rows = 0;        ///< the chunk's rows c
};

class RankMajorLayout {
public:
  /// Fails (std::errc::invalid_argument, saying why) unless the collective
  /// is reduce-scatter or all-gather, G >= 2, M is positive and divides by
  /// G, and `chunks` is not empty, positive and sums to M/G, with
  /// G x chunks.size() <= kMaxTiles.
  static llvm::Expected<RankMajorLayout> create(Collective collective,
                                                int64_t m, int64_t group,
                                                llvm::ArrayRef<int64_t> chunks);

  Collective getCollective() const { return collective; }
  int64_t groupSize() const { return group; }
  /// Rows of one block: M / G.
  int64_t blockSize() const { return m / group; }
  llvm::ArrayRef<int64_t> getChunks() const { return chunks; }
  /// G x k tiles, in execution order.
  size_t size() const { return tiles.size(); }
  const RankMajorTile &operator[](size_t t) const { return tiles[t]; }
  llvm::ArrayRef<RankMajorTile> getTiles() const { return tiles; }
  /// The tiles' rows in execution order: Plan::tiles.
  std::vector<int64_t> tileRows() const;

  /// Whether tile t is exchanged (every step but 0, the rank's own block).
  bool exchanges(size_t t) const { return tiles[t].step != 0; }
  /// The shift of tile t: +s for reduce-scatter, -s for all-gather (0 on
  /// step 0). Rank r sends to (r + shift) mod G, receives from
  /// (r - shift) mod G.
  int64_t shift(size_t t) const;
  int64_t sendPeer(size_t t, int64_t rank) const;
  int64_t recvPeer(size_t t, int64_t rank) const;
  /// The block rank `rank` computes on tile t: (rank + s) mod G. For
  /// all-gather it is also the block it receives (from its owner); for
  /// reduce-scatter the partial of it is sent to its owner, and what rank
  /// `rank` receives is a partial of its own block `rank`, same chunk.
  int64_t block(size_t t, int64_t rank) const;
  /// First row of the full product of tile t as rank `rank` computes it:
  /// block(t, rank) x M/G + chunkOffset (reduce-scatter: of A; all-gather:
  /// of C and of the gathered A). Its rows are [globalRow, globalRow + rows).
  int64_t globalRow(size_t t, int64_t rank) const;

private:
  RankMajorLayout() = default;

  Collective collective = Collective::ReduceScatter;
  int64_t m = 0;
  int64_t group = 0;
  std::vector<int64_t> chunks;
  std::vector<RankMajorTile> tiles;
};

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_RANKMAJOR_H

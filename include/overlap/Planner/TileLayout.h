//===- TileLayout.h - Where the rows of each tile are ----------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The one rule of how a plan's tiles address the rows of a fused matmul +
// collective (docs/architecture.md, "Conventions that span passes"). Plans
// partition the M rows of the full product (M of A for all-reduce and
// reduce-scatter, M of the result for all-gather). For reduce-scatter and
// all-gather the rows are G blocks of M/G rows, one per rank, and tile i
// takes tiles[i]/G rows at offset off_i/G of every block; its G slices sit
// one after another in a packed buffer, one collective call. All-reduce has
// one block (all of M), so a tile is a plain row range.
//
// overlap-decompose builds its IR from this layout (through PlannerBridge),
// and overlap-bench runs and checks the same layout on a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_TILELAYOUT_H
#define OVERLAP_PLANNER_TILELAYOUT_H

#include "overlap/Planner/Profile.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace overlap {
namespace planner {

/// Blocks a collective's rows are split into: G (the group size) for
/// reduce-scatter and all-gather, 1 for all-reduce.
int64_t layoutSlots(Collective collective, int64_t group);

/// One M-tile. For all-reduce the block is all of M (one slot), so the
/// block offset and rows are the tile's own.
struct TileSpan {
  int64_t offset = 0;      ///< first row of the full product
  int64_t rows = 0;        ///< rows of the full product
  int64_t blockOffset = 0; ///< offset / slots: first row in every block
  int64_t blockRows = 0;   ///< rows / slots: rows in every block
};

/// The tiles of a matmul + collective as the compiler decomposes them. The
/// tiles' packed buffers (reduce-scatter: the GEMM's output; all-gather:
/// the gathered A) one after another make a buffer of M rows: row
/// `packedRow(t, slot, r)`.
class TileLayout {
public:
  /// Fails (std::errc::invalid_argument, saying why) unless M and the group
  /// are positive, the tiles positive and summing to M and, for
  /// reduce-scatter and all-gather, M and every tile divide by G.
  static llvm::Expected<TileLayout> create(Collective collective, int64_t m,
                                           int64_t group,
                                           llvm::ArrayRef<int64_t> tiles);

  Collective getCollective() const { return collective; }
  /// layoutSlots of the collective and group.
  int64_t slots() const { return numSlots; }
  /// Rows of one block: M / slots.
  int64_t blockSize() const { return m / numSlots; }
  size_t size() const { return spans.size(); }
  const TileSpan &operator[](size_t t) const { return spans[t]; }
  llvm::ArrayRef<TileSpan> getSpans() const { return spans; }

  /// Whether tile t takes whole blocks (the unsplit problem). Its packed
  /// order is then the row order of the full product, so it needs no pack
  /// and its GEMM is one call of `rows` rows.
  bool isWhole(size_t t) const { return spans[t].blockRows == blockSize(); }
  /// Batch count of tile t's GEMM: one matrix per slot, or 1 when whole.
  int64_t gemmBatch(size_t t) const { return isWhole(t) ? 1 : numSlots; }

  /// Row of the full product of (tile, slot, row within the slice).
  int64_t globalRow(size_t t, int64_t slot, int64_t row) const {
    return slot * blockSize() + spans[t].blockOffset + row;
  }
  /// Row of the packed buffer holding (tile, slot, row within the slice).
  int64_t packedRow(size_t t, int64_t slot, int64_t row) const {
    return spans[t].offset + slot * spans[t].blockRows + row;
  }

  struct Location {
    size_t tile;
    int64_t slot;
    int64_t row;
  };
  /// The tile, slot and row within the slice of row `row` (in [0, M)) of
  /// the full product: the inverse of globalRow.
  Location locate(int64_t row) const;

private:
  TileLayout() = default;

  Collective collective = Collective::AllReduce;
  int64_t m = 0;
  int64_t numSlots = 1;
  std::vector<TileSpan> spans;
};

/// Copies rows of the full product (`src`, `rowBytes` each, M of them) into
/// the packed order of `layout`: what an all-gather of every tile delivers.
void arrangeRows(const TileLayout &layout, const char *src, size_t rowBytes,
                 char *dst);

/// At most `count` near-equal tiles (the larger ones first) summing to M,
/// every block split the same way: uniformTiles(M, n, slots) with n =
/// min(count, M / slots), so reduce-scatter and all-gather tiles are
/// multiples of the group, and there are fewer tiles when a block has
/// fewer rows than `count`. Fails when M, the group or the count is not
/// positive or M does not divide by the slots.
llvm::Expected<std::vector<int64_t>>
uniformTiles(Collective collective, int64_t m, int64_t group, int64_t count);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_TILELAYOUT_H

//===- BenchLayout.h - Tiles, wire bytes, shapes for the bench --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The parts of overlap-bench that need no GPU, kept apart so that they can be
// tested where there is none (OverlapBenchTests):
//   - the tile layout of the compiler's decomposition (Decompose.cpp,
//     docs/architecture.md): for reduce-scatter and all-gather, tile i takes
//     tiles[i] / G rows at offset off_i / G of every rank's block of M / G
//     rows, and its G slices sit one after another in a packed buffer;
//   - the bytes one rank puts on the wire in a ring collective;
//   - uniform tiles, argument lists, and the pack benchmark's blocks with a
//     host reference of pack and unpack.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_TOOLS_BENCHLAYOUT_H
#define OVERLAP_TOOLS_BENCHLAYOUT_H

#include "overlap/Planner/Profile.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace overlap {
namespace bench {

//===----------------------------------------------------------------------===//
// Argument lists
//===----------------------------------------------------------------------===//

/// Reads a positive decimal integer at `text[pos]` and advances `pos`.
/// Rejects signs, empty digits and values that do not fit 2^62 (so that
/// products of a few of them are still checked for overflow by the callers).
inline bool readPositive(const std::string &text, size_t &pos, int64_t &out) {
  size_t start = pos;
  int64_t v = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    if (v > (int64_t(1) << 62) / 10)
      return false;
    v = v * 10 + (text[pos++] - '0');
  }
  out = v;
  return pos > start && v > 0;
}

/// Splits at commas; an empty item (",," or a trailing comma) is kept so
/// that the parsers reject it.
inline std::vector<std::string> splitList(const std::string &text) {
  std::vector<std::string> items;
  size_t at = 0;
  for (;;) {
    size_t comma = text.find(',', at);
    items.push_back(text.substr(
        at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos)
      return items;
    at = comma + 1;
  }
}

struct GemmShape {
  int64_t m, n, k;
};

/// "MxNxK[,MxNxK...]", all positive; nullopt when malformed.
inline std::optional<std::vector<GemmShape>>
parseGemmShapes(const std::string &text) {
  std::vector<GemmShape> shapes;
  for (const std::string &item : splitList(text)) {
    GemmShape s;
    size_t pos = 0;
    if (!readPositive(item, pos, s.m) || pos >= item.size() ||
        item[pos++] != 'x' || !readPositive(item, pos, s.n) ||
        pos >= item.size() || item[pos++] != 'x' ||
        !readPositive(item, pos, s.k) || pos != item.size())
      return std::nullopt;
    shapes.push_back(s);
  }
  return shapes;
}

/// "all-reduce[,reduce-scatter[,all-gather]]" in any order, no repeats.
inline std::optional<std::vector<planner::Collective>>
parseCollectives(const std::string &text) {
  std::vector<planner::Collective> out;
  for (const std::string &item : splitList(text)) {
    std::optional<planner::Collective> c = planner::parseCollective(item);
    if (!c || std::find(out.begin(), out.end(), *c) != out.end())
      return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Tile layout
//===----------------------------------------------------------------------===//

/// One M-tile. For all-reduce the block is all of M (one slot), so the
/// block offset and rows are the tile's own.
struct TileSpan {
  int64_t offset = 0;      ///< first row of the full product
  int64_t rows = 0;        ///< rows of the full product
  int64_t blockOffset = 0; ///< offset / slots: first row in every block
  int64_t blockRows = 0;   ///< rows / slots: rows in every block
};

/// The tiles of a matmul + collective as the compiler decomposes it. Rows of
/// the full product (M of A for all-reduce and reduce-scatter, M of the
/// result for all-gather) are split into `slots` blocks of M / slots rows
/// (slots = G for reduce-scatter and all-gather, 1 for all-reduce); tile t
/// takes the same rows of every block. Its packed buffer (reduce-scatter:
/// the GEMM's output; all-gather: the gathered A) holds those G slices one
/// after another, and the tiles' packed buffers one after another make a
/// buffer of M rows: row `packedRow(t, slot, r)`.
class TileLayout {
public:
  /// Fails (saying why in `why`) unless the tiles are positive and sum to M
  /// and, for reduce-scatter and all-gather, M and every tile divide by G.
  static std::optional<TileLayout> create(planner::Collective collective,
                                          int64_t m, int64_t group,
                                          const std::vector<int64_t> &tiles,
                                          std::string &why) {
    TileLayout l;
    l.collective = collective;
    l.m = m;
    l.numSlots = collective == planner::Collective::AllReduce ? 1 : group;
    if (m <= 0 || group <= 0 || tiles.empty()) {
      why = "M, the group and the tile count must be positive";
      return std::nullopt;
    }
    if (m % l.numSlots) {
      why = "M (" + std::to_string(m) + ") is not a multiple of the group (" +
            std::to_string(group) + ")";
      return std::nullopt;
    }
    int64_t off = 0;
    for (int64_t rows : tiles) {
      if (rows <= 0 || rows % l.numSlots) {
        why = "tile of " + std::to_string(rows) +
              " rows is not a positive multiple of the group (" +
              std::to_string(l.numSlots) + ")";
        return std::nullopt;
      }
      l.spans.push_back({off, rows, off / l.numSlots, rows / l.numSlots});
      off += rows;
    }
    if (off != m) {
      why = "tiles sum to " + std::to_string(off) +
            ", not M = " + std::to_string(m);
      return std::nullopt;
    }
    return l;
  }

  planner::Collective getCollective() const { return collective; }
  int64_t getM() const { return m; }
  /// G for reduce-scatter and all-gather, 1 for all-reduce.
  int64_t slots() const { return numSlots; }
  /// Rows of one block: M / slots.
  int64_t blockSize() const { return m / numSlots; }
  size_t size() const { return spans.size(); }
  const TileSpan &operator[](size_t t) const { return spans[t]; }

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
  /// The tile, slot and row within the slice of row `row` of the full
  /// product (the inverse of globalRow).
  Location locate(int64_t row) const {
    int64_t slot = row / blockSize(), inBlock = row % blockSize();
    size_t t = 0;
    while (inBlock >= spans[t].blockOffset + spans[t].blockRows)
      ++t;
    return {t, slot, inBlock - spans[t].blockOffset};
  }

private:
  planner::Collective collective = planner::Collective::AllReduce;
  int64_t m = 0;
  int64_t numSlots = 1;
  std::vector<TileSpan> spans;
};

/// Copies rows of the full product (`src`, `rowBytes` each, M of them) into
/// the packed order of `layout`: what an all-gather of every tile delivers.
inline void arrangeRows(const TileLayout &layout, const char *src,
                        size_t rowBytes, char *dst) {
  for (size_t t = 0; t < layout.size(); ++t)
    for (int64_t slot = 0; slot < layout.slots(); ++slot)
      std::memcpy(dst + size_t(layout.packedRow(t, slot, 0)) * rowBytes,
                  src + size_t(layout.globalRow(t, slot, 0)) * rowBytes,
                  size_t(layout[t].blockRows) * rowBytes);
}

/// Bytes one rank puts on the wire in a ring collective of a tile of
/// `tileBytes` (the tile's rows x N for all-reduce and reduce-scatter, its
/// gathered rows x K for all-gather) over `group` ranks: 2(G-1)/G of it for
/// all-reduce (rounded to the nearest byte), (G-1)/G for reduce-scatter and
/// all-gather (exact for their tiles, which divide by G). planner::ringFactor
/// in integers.
inline int64_t ringWireBytes(planner::Collective collective, int64_t group,
                             int64_t tileBytes) {
  if (group <= 1)
    return 0;
  if (collective == planner::Collective::AllReduce)
    return (2 * (group - 1) * tileBytes + group / 2) / group;
  return (group - 1) * tileBytes / group;
}

/// `count` near-equal tiles (the larger ones first) summing to M; for
/// reduce-scatter and all-gather every block is split the same way, so the
/// tiles are multiples of `group`. Fewer tiles when there are fewer rows;
/// empty when M does not divide by the group.
inline std::vector<int64_t> uniformTiles(planner::Collective collective,
                                         int64_t m, int64_t group,
                                         int64_t count) {
  int64_t slots = collective == planner::Collective::AllReduce ? 1 : group;
  if (m <= 0 || slots <= 0 || count <= 0 || m % slots)
    return {};
  int64_t block = m / slots, n = std::min(count, block);
  std::vector<int64_t> tiles;
  for (int64_t i = 0; i < n; ++i)
    tiles.push_back((block / n + (i < block % n ? 1 : 0)) * slots);
  return tiles;
}

//===----------------------------------------------------------------------===//
// Pack benchmark blocks
//===----------------------------------------------------------------------===//

/// A 2-D strided block: `rows` rows of `rowBytes`, `strideBytes` apart, of
/// `elemBytes`-byte elements (overlap_pack with n0 = 1, n1 = rows,
/// n2 = rowBytes / elemBytes, s1 = strideBytes / elemBytes).
struct PackBlock {
  int64_t rows = 0;
  int64_t rowBytes = 0;
  int64_t strideBytes = 0;
  int64_t elemBytes = 1;

  /// Bytes of the packed block.
  int64_t bytes() const { return rows * rowBytes; }
  /// Bytes the strided side spans, from its first row to its last.
  int64_t footprint() const { return (rows - 1) * strideBytes + rowBytes; }
};

/// Whether `b` is a block the pack API takes: positive sizes, the element
/// dividing the row and the stride, the stride at least the row (so that
/// unpack writes every byte once), and at most 2^40 bytes spanned.
inline bool validPackBlock(const PackBlock &b, std::string &why) {
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

/// The default element size of a row: 4, 2 or 1 bytes, the widest that
/// divides it (f32, f16/bf16, bytes).
inline int64_t defaultElemBytes(int64_t rowBytes) {
  return rowBytes % 4 == 0 ? 4 : rowBytes % 2 == 0 ? 2 : 1;
}

/// "[ROWSx]ROWBYTES[@STRIDE][:ELEM][,...]" in bytes. Defaults: ROWS =
/// totalBytes / ROWBYTES (at least 1), STRIDE = 2 x ROWBYTES, ELEM =
/// defaultElemBytes(ROWBYTES). Fails (saying why) on a malformed item or an
/// invalid block.
inline std::optional<std::vector<PackBlock>>
parsePackBlocks(const std::string &text, int64_t totalBytes, std::string &why) {
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

/// The default sweep, `totalBytes` packed per block: every power-of-two row
/// from 2 B to 16 KiB with f16-sized and (from 4 B) f32-sized elements and
/// a stride of twice the row; then rows that allow only narrower accesses
/// (odd lengths, a stride that is not a multiple of 16) and 1-, 8- and
/// 16-byte elements.
inline std::vector<PackBlock> defaultPackBlocks(int64_t totalBytes) {
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

/// The access width the pack kernel picks (docs/cuda.md): the widest of 16,
/// 8, 4, 2, 1 bytes dividing the row length and the stride, for base
/// addresses aligned to 16 bytes (cudaMalloc gives 256).
inline int packAccessBytes(const PackBlock &b) {
  uint64_t bits = uint64_t(b.rowBytes);
  if (b.rows > 1)
    bits |= uint64_t(b.strideBytes);
  for (int w = 16; w > 1; w /= 2)
    if (bits % uint64_t(w) == 0)
      return w;
  return 1;
}

/// Host references: packed = the block's rows one after another.
inline void hostPack(const PackBlock &b, const char *strided, char *packed) {
  for (int64_t r = 0; r < b.rows; ++r)
    std::memcpy(packed + r * b.rowBytes, strided + r * b.strideBytes,
                size_t(b.rowBytes));
}

/// The rows of the strided side = packed; the bytes between rows untouched.
inline void hostUnpack(const PackBlock &b, const char *packed, char *strided) {
  for (int64_t r = 0; r < b.rows; ++r)
    std::memcpy(strided + r * b.strideBytes, packed + r * b.rowBytes,
                size_t(b.rowBytes));
}

} // namespace bench
} // namespace overlap

#endif // OVERLAP_TOOLS_BENCHLAYOUT_H

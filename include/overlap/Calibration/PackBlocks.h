//===- PackBlocks.h - The pack benchmark's blocks --------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The strided 2-D blocks `overlap-bench --pack` measures: parsing them, the
// default sweep, the access width the pack kernel picks, and host references
// of pack and unpack that the GPU's results are compared with. Pure C++
// (OverlapCalibration); the measurement is PackMeasure.h's.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_PACKBLOCKS_H
#define OVERLAP_CALIBRATION_PACKBLOCKS_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace overlap {
namespace calibration {

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
bool validPackBlock(const PackBlock &b, std::string &why);

/// The default element size of a row: 4, 2 or 1 bytes, the widest that
/// divides it (f32, f16/bf16, bytes).
int64_t defaultElemBytes(int64_t rowBytes);

/// "[ROWSx]ROWBYTES[@STRIDE][:ELEM][,...]" in bytes. Defaults: ROWS =
/// totalBytes / ROWBYTES (at least 1), STRIDE = 2 x ROWBYTES, ELEM =
/// defaultElemBytes(ROWBYTES). Fails (saying why) on a malformed item or an
/// invalid block.
std::optional<std::vector<PackBlock>>
parsePackBlocks(const std::string &text, int64_t totalBytes, std::string &why);

/// The default sweep, `totalBytes` packed per block: every power-of-two row
/// from 2 B to 16 KiB with f16-sized and (from 4 B) f32-sized elements and
/// a stride of twice the row; then rows that allow only narrower accesses
/// (odd lengths, a stride that is not a multiple of 16) and 1-, 8- and
/// 16-byte elements.
std::vector<PackBlock> defaultPackBlocks(int64_t totalBytes);

/// The access width the pack kernel picks (docs/cuda.md): the widest of 16,
/// 8, 4, 2, 1 bytes dividing the row length and the stride, for base
/// addresses aligned to 16 bytes (cudaMalloc gives 256).
int packAccessBytes(const PackBlock &b);

/// Payload bandwidth of `us` for the block: packed bytes / time, in GB/s
/// (1e9 B/s; each byte counted once, not read + write).
double packGbps(const PackBlock &b, double us);

/// Host reference: packed = the block's rows one after another.
void hostPack(const PackBlock &b, const char *strided, char *packed);

/// The rows of the strided side = packed; the bytes between rows untouched.
void hostUnpack(const PackBlock &b, const char *packed, char *strided);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_PACKBLOCKS_H

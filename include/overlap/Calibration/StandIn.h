//===- StandIn.h - The legs that stand in for a network --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// What overlap-bench and overlap-calibrate use for communication (--leg):
//   copy-engine  one process: each tile's ring wire bytes copied device ->
//                pinned host by cudaMemcpyAsync on the comm stream. The copy
//                engines use no SM and ignore stream priority, so this leg
//                cannot show what the SM budget or the priority buy.
//   sm-copy      one process: the same bytes copied device -> device by a
//                copy kernel of a bounded number of CTAs on the comm stream
//                (smCopyCtas: the context's comm_sms). Like NCCL's kernels it
//                takes SMs from the GEMMs, waits for SMs a GEMM holds, and is
//                scheduled by the comm stream's priority.
//   nccl         NCCL's collective, one process per GPU.
// The two stand-ins move the same bytes (standInBytes). Pure C++
// (OverlapCalibration), tested without a GPU; the kernel is in
// lib/Calibration/Cuda.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_STANDIN_H
#define OVERLAP_CALIBRATION_STANDIN_H

#include "overlap/Planner/Profile.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace overlap {
namespace calibration {

enum class Leg { CopyEngine, SmCopy, Nccl };

/// "copy-engine", "sm-copy" or "nccl".
std::optional<Leg> parseLeg(const std::string &name);
const char *legName(Leg leg);

/// The error of a --leg value that parseLeg rejects (one line).
std::string badLegMessage(const std::string &given);

/// What a stand-in leg moves for one tile of `tileBytes` (the tile's rows
/// of what the collective carries) over a group of `group` ranks.
struct StandInBytes {
  /// To the far side (the mirror buffer): the bytes one rank puts on the
  /// wire in a ring, planner::ringWireBytes of the tile.
  size_t wire = 0;
  /// Of `wire`, the bytes read from the tile itself; all-reduce's ring
  /// moves up to twice the tile, the rest comes from a scratch buffer.
  size_t fromTile = 0;
  /// This rank's own slice, copied within the device into its slot of the
  /// output (all-gather and all-to-all; a ring never sends it).
  size_t local = 0;
  size_t total() const { return wire + local; }
};

StandInBytes standInBytes(planner::Collective coll, int64_t group,
                          size_t tileBytes);

/// The sm-copy kernel's CTAs: `commSms` when the context reserves SMs for
/// communication (the budget NCCL's maxCTAs gets), else every SM (no
/// reservation: the copy competes for the whole device); at least 1 and at
/// most `smCount` when that is known (> 0).
int smCopyCtas(int64_t commSms, int64_t smCount);

/// Threads per block of the sm-copy kernel (NCCL's default block size).
constexpr int kSmCopyThreads = 512;

/// The sm-copy kernel's word: the widest of 16, 8, 4, 2 and 1 bytes that
/// divides both addresses and the byte count.
unsigned copyWordBytes(uintptr_t dst, uintptr_t src, size_t bytes);

/// The blocks one copy of `bytes` in words of `word` bytes launches: `ctas`,
/// or fewer when there are fewer words than threads in `ctas` blocks; 0 for
/// no bytes.
int smCopyBlocks(int ctas, size_t bytes, unsigned word);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_STANDIN_H

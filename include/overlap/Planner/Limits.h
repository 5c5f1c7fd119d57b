//===- Limits.h - The values and the work the Planner accepts --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Every problem size, profile number and search of the Planner is bounded
// here, in one place, so that its arithmetic stays in range: products of
// two sizes fit int64, byte counts and FLOPs stay exact enough in a double,
// and no search runs for minutes. Problems and profiles beyond a limit are
// refused with an error naming the value and the limit (CostModel::create,
// parseProfile); a strategy whose search would pass the work bound fails
// with a message that says so (docs/planner.md, "Limits").
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_PLANNER_LIMITS_H
#define OVERLAP_PLANNER_LIMITS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace overlap {
namespace planner {

/// M, N and K, and the N and K of a profile's GEMM curves: 2^31. Products
/// of two sizes (K x N in mc2, output tiles in waves) stay below 2^62, and
/// M x N x K x 4 bytes below 2^95, which doubles hold to 1 part in 2^53.
constexpr int64_t kMaxDim = int64_t(1) << 31;
/// Group sizes, of problems and of profile curves (and GEMM curve batches).
constexpr int64_t kMaxRanks = 65536;
/// Tiles of one plan: uniform:n's n, mc2's blocks, waves' groups, FiCCO's
/// steps, the tiles given to evaluateTiles.
constexpr int64_t kMaxTiles = 4096;
/// Counts in a profile: alignment, device.sm_count, device.comm_sms and the
/// sides of device.gemm_tile (lcm(alignment, ranks) stays below 2^36).
constexpr int64_t kMaxProfileCount = int64_t(1) << 20;
/// Times in a profile (latencies, curve table values), µs: 1000 s.
constexpr double kMaxProfileUs = 1e9;
/// Rates in a profile: device.peak_tflops (TFLOP/s) and
/// device.memory_bandwidth_gbps (GB/s).
constexpr double kMinProfileRate = 1e-6;
constexpr double kMaxProfileRate = 1e9;
/// Contention factors (slowdowns, >= 1).
constexpr double kMaxContention = 1000;
/// FiCCO's reference time (µs) and thresholds, and gemm.roofline's
/// efficiency (at most 1): small enough numbers divided by them stay finite.
constexpr double kMinProfileFraction = 1e-6;
constexpr double kMaxFiccoValue = 1e12;
/// Times a plan predicts, µs (about 32 years): past it, or not finite, the
/// profile's curves were taken far outside what they describe.
constexpr double kMaxPlanUs = 1e15;
/// The chain planner's fast memory, elements: its tiles (about the square
/// root) stay far inside int64.
constexpr double kMaxFastMemory = 0x1p62;
/// Work bound of one strategy: the pipeline steps it simulates (one per
/// tile of every candidate tiling it prices; for optimal, every DP state
/// it extends) or, for the chain planner, the splits OP_Count compares.
/// About half a second of planning (optimal takes some 8 ns a step): it
/// covers optimal up to 1000 to 2000 blocks of the alignment (the DP's
/// fronts vary with the profile), waves up to about 2900 waves and the chain
/// planner up to about 730 matrices.
constexpr uint64_t kMaxSearchSteps = uint64_t(1) << 26;

/// Success when lo <= value <= hi; else std::errc::invalid_argument,
/// "<what>: expected <expected> in [lo, hi], got <value>".
llvm::Error checkLimit(const llvm::Twine &what, int64_t value, int64_t lo,
                       int64_t hi, const llvm::Twine &expected);

/// The error of a strategy whose search would take `work` units (pipeline
/// steps, or splits for the chain planner), more than kMaxSearchSteps
/// (std::errc::result_out_of_range): "<strategy>: <why> needs at least
/// <work> <unit>, past the planner's work bound of <kMaxSearchSteps>;
/// <hint>".
llvm::Error workBoundError(llvm::StringRef strategy, const llvm::Twine &why,
                           uint64_t work, llvm::StringRef unit,
                           const llvm::Twine &hint);

} // namespace planner
} // namespace overlap

#endif // OVERLAP_PLANNER_LIMITS_H

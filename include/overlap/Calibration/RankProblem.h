//===- RankProblem.h - Inputs and references of every rank -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// What lets several processes (one rank per GPU) measure a GEMM +
// collective together without exchanging their inputs:
//   - inputs from seeds that include the rank, element by element, so that
//     any rank can regenerate any other rank's A, B and C0 on the host;
//   - the double-precision reference of a rank's C0 + A.B, and the expected
//     element of a sum over ranks (all-reduce, reduce-scatter) with a bound
//     for the GEMMs' and the reduction's rounding in the element type;
//   - reading elements of f32, f16 and bf16 and finding the NaN poison.
// Pure C++ (OverlapCalibration).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_CALIBRATION_RANKPROBLEM_H
#define OVERLAP_CALIBRATION_RANKPROBLEM_H

#include "overlap/Planner/CostModel.h"
#include "overlap/Planner/TileLayout.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace overlap {
namespace calibration {

/// splitmix64's finalizer: a bijective 64-bit mix.
uint64_t mix64(uint64_t x);

enum class Operand { A = 0, B = 1, C0 = 2 };

/// The seed of one operand of `rank`'s inputs in the input set `setSeed`.
/// Distinct for every (set, rank, operand), so that no two ranks add the
/// same data (a reduction of equal terms would hide a rank's missing or
/// doubled contribution).
uint64_t inputSeed(uint64_t setSeed, int64_t rank, Operand operand);

/// Significant bits (implicit bit included) of an element type.
int significandBits(overlap_dtype dtype);

/// The unit roundoff of an element type: the relative error of one rounding.
double unitRoundoff(overlap_dtype dtype);

/// Relative tolerance of one GEMM output element against a double
/// reference: the accumulation and the cuBLASLt kernel's choices (f32 in
/// full precision unless TF32 is allowed).
double gemmTolerance(overlap_dtype dtype);

/// Element `index` of the matrix made from `seed`: k / 2^(b-1) for a k drawn
/// uniformly from [-2^(b-1), 2^(b-1)) without 0, b = significandBits(dtype).
/// So it is in [-1, 1), never zero, and exact in the element type: the
/// uploaded bits, the value the GPU reads and the reference's operand are the
/// same number, on every rank that regenerates it.
float inputElement(overlap_dtype dtype, uint64_t seed, uint64_t index);

/// Stores `value`, which must be exact in `dtype` and a normal number (as
/// inputElement's are), as the type's bits at `dst`.
void storeExact(overlap_dtype dtype, float value, char *dst);

/// `count` elements of the matrix made from `seed`, from element `first`
/// on, as raw bytes of `dtype`.
std::vector<char> inputElements(overlap_dtype dtype, uint64_t seed,
                                size_t count, size_t first = 0);

/// The value of the element of `dtype` at `bytes` (any bits: NaN, infinity,
/// subnormals), as a float.
float decodeElement(overlap_dtype dtype, const char *bytes);

/// Element `i` of raw `bytes` of `dtype`.
float elementAt(const std::vector<char> &bytes, overlap_dtype dtype, size_t i);

/// One input set of a run of `C (M x N) += A . B` fused with `collective`
/// over `group` ranks, every rank's operands element by element. Rank r's A
/// is M x K for all-reduce and reduce-scatter, and its M/G x K shard for
/// all-gather (the gathered A is the shards in rank order); B is K x N and
/// C0 is M x N on every rank.
struct RankProblem {
  planner::Collective collective;
  int64_t m, n, k, group;
  overlap_dtype dtype;
  uint64_t setSeed;
  /// All-to-all (one expert per rank): which exchange. Dispatch: rank r's
  /// A is M x K, block j (M/G rows) going to rank j, and its GEMM
  /// multiplies what arrived (block r of every rank, in rank order).
  /// Combine: its A is M x K and its GEMM's output goes back by blocks.
  planner::AllToAllSide side = planner::AllToAllSide::Dispatch;

  bool gathers() const { return collective == planner::Collective::AllGather; }
  bool dispatches() const { return planner::dispatches(collective, side); }
  bool combines() const { return planner::combines(collective, side); }
  /// Rows of one rank's own A.
  int64_t aRows() const { return gathers() ? m / group : m; }
  uint64_t seed(int64_t rank, Operand operand) const {
    return inputSeed(setSeed, rank, operand);
  }
  /// Element (i, p) of `rank`'s own A.
  double a(int64_t rank, int64_t i, int64_t p) const;
  /// Row `i` of the A that `rank`'s GEMM multiplies: its own, for
  /// all-gather row i of the gathered A (every rank's shard), for dispatch
  /// row i of what arrived (rank i / (M/G)'s rows of block `rank`).
  double gemmA(int64_t rank, int64_t i, int64_t p) const;
  double b(int64_t rank, int64_t p, int64_t j) const;
  double c0(int64_t rank, int64_t i, int64_t j) const;
  /// `rank`'s C0 + A.B at row i (of the full product), column j, in double.
  double reference(int64_t rank, int64_t i, int64_t j) const;
  /// Every rank's shard of A in rank order (all-gather: what the gathered
  /// buffer holds, in row order), as bytes.
  std::vector<char> gatheredA() const;
  /// Dispatch: what `rank` receives, block r of every rank's A in rank
  /// order (M x K bytes, row order).
  std::vector<char> dispatchedA(int64_t rank) const;
};

/// Whether `got` is within a GEMM's tolerance of its double reference.
bool gemmAccepts(overlap_dtype dtype, double got, double reference);

/// The first of `count` elements of `dtype` at `bytes` that is a NaN (an
/// output nobody wrote still holds the 0xff poison, a NaN in every type),
/// or -1.
int64_t firstNaN(overlap_dtype dtype, const char *bytes, size_t count);

/// An element a sum over ranks must deliver, and how far it may be off.
struct ExpectedElement {
  double value = 0;
  double bound = 0;
  /// NaN (a poisoned element nobody wrote) is never accepted.
  bool accepts(double got) const;
};

/// The element of a sum over ranks (all-reduce; reduce-scatter) at row i
/// of the full product, column j, seen from rank `me`, whose own term
/// `local` (what its GEMM wrote, the collective's input) is known exactly.
/// The other ranks' terms are their double references, each within a GEMM's
/// tolerance of what their GPUs computed; the reduction adds G terms with at
/// most G - 1 roundings to the element type (ring, tree or any other order),
/// each off by at most one unit roundoff of the partial sum, which is at
/// most the sum of the terms' magnitudes. With one rank the bound is 0: the
/// reduction must deliver its input bit for bit.
ExpectedElement expectedSum(const RankProblem &problem, int64_t me,
                            double local, int64_t i, int64_t j);

/// The row of the full product that row `q` of a sum's result holds on rank
/// `me`: all-reduce delivers every row, reduce-scatter the rows of block
/// `me` (M/G rows).
int64_t sumResultRow(const planner::TileLayout &layout, int64_t me, int64_t q);

} // namespace calibration
} // namespace overlap

#endif // OVERLAP_CALIBRATION_RANKPROBLEM_H

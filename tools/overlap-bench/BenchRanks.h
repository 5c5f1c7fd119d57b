//===- BenchRanks.h - What every rank of a run can compute --*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The host-side logic that lets several processes (one rank per GPU, started
// by mpirun, srun or torchrun) run overlap-bench and overlap-calibrate
// together without exchanging their inputs, kept apart from the GPU code so
// that it is tested where there is none (OverlapBenchTests):
//   - inputs from seeds that include the rank, element by element, so that
//     any rank can regenerate any other rank's A, B and C0 on the host;
//   - the double-precision reference of a rank's C0 + A.B, and the expected
//     element of a sum over ranks (all-reduce, reduce-scatter) with a bound
//     for the GEMMs' and the reduction's rounding in the element type;
//   - the fixed-size report each rank sends the others (all-gather) after a
//     step: its argument fingerprint, its failure, its timings; and what
//     rank 0 makes of them: the slowest rank's time per run, who failed.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_TOOLS_BENCHRANKS_H
#define OVERLAP_TOOLS_BENCHRANKS_H

#include "BenchLayout.h"
#include "overlap/Runtime/overlap_runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace overlap {
namespace bench {

//===----------------------------------------------------------------------===//
// Inputs per rank
//===----------------------------------------------------------------------===//

/// splitmix64's finalizer: a bijective 64-bit mix.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

enum class Operand { A = 0, B = 1, C0 = 2 };

/// The seed of one operand of `rank`'s inputs in the input set `setSeed`.
/// Distinct for every (set, rank, operand), so that no two ranks add the
/// same data (a reduction of equal terms would hide a rank's missing or
/// doubled contribution).
inline uint64_t inputSeed(uint64_t setSeed, int64_t rank, Operand operand) {
  // Not a symmetric combination (xor of two mixes would give set 0 / rank 1
  // the seed of set 1 / rank 0).
  return mix64(mix64(setSeed) + uint64_t(rank) * 3 + uint64_t(operand));
}

/// Significant bits (implicit bit included) of an element type.
inline int significandBits(overlap_dtype dtype) {
  return dtype == OVERLAP_F32 ? 24 : dtype == OVERLAP_F16 ? 11 : 8;
}

/// The unit roundoff of an element type: the relative error of one rounding.
inline double unitRoundoff(overlap_dtype dtype) {
  return std::ldexp(1.0, -significandBits(dtype));
}

/// Relative tolerance of one GEMM output element against a double
/// reference: the accumulation and the cuBLASLt kernel's choices (f32 in
/// full precision unless TF32 is allowed).
inline double gemmTolerance(overlap_dtype dtype) {
  return dtype == OVERLAP_F32 ? 1e-4 : dtype == OVERLAP_F16 ? 4e-3 : 2e-2;
}

/// Element `index` of the matrix made from `seed`: k / 2^(b-1) for a k drawn
/// uniformly from [-2^(b-1), 2^(b-1)) without 0, b = significandBits(dtype).
/// So it is in [-1, 1), never zero, and exact in the element type: the
/// uploaded bits, the value the GPU reads and the reference's operand are the
/// same number, on every rank that regenerates it.
inline float inputElement(overlap_dtype dtype, uint64_t seed, uint64_t index) {
  const int bits = significandBits(dtype);
  const int64_t half = int64_t(1) << (bits - 1);
  int64_t k = int64_t(mix64(seed ^ mix64(index)) >> (64 - bits)) - half;
  if (k == 0)
    k = half / 2; // 0.5
  // Exact: half is a power of 2.
  return float(double(k) / double(half));
}

/// Stores `value`, which must be exact in `dtype` and a normal number (as
/// inputElement's are), as the type's bits at `dst`.
inline void storeExact(overlap_dtype dtype, float value, char *dst) {
  if (dtype == OVERLAP_F32) {
    std::memcpy(dst, &value, 4);
    return;
  }
  uint32_t f;
  std::memcpy(&f, &value, 4);
  uint16_t h;
  if (dtype == OVERLAP_BF16) {
    h = uint16_t(f >> 16); // exact values have no lower bits
  } else {
    // f16: 5 exponent bits (bias 15), 10 fraction bits.
    uint32_t sign = (f >> 16) & 0x8000u;
    if ((f & 0x7fffffffu) == 0) {
      h = uint16_t(sign);
    } else {
      int exponent = int((f >> 23) & 0xff) - 127 + 15;
      h = uint16_t(sign | uint32_t(exponent) << 10 | (f & 0x7fffffu) >> 13);
    }
  }
  std::memcpy(dst, &h, 2);
}

/// `count` elements of the matrix made from `seed`, from element `first`
/// on, as raw bytes of `dtype`.
inline std::vector<char> inputElements(overlap_dtype dtype, uint64_t seed,
                                       size_t count, size_t first = 0) {
  const size_t elt = dtype == OVERLAP_F32 ? 4 : 2;
  std::vector<char> out(count * elt);
  for (size_t i = 0; i < count; ++i)
    storeExact(dtype, inputElement(dtype, seed, first + i), &out[i * elt]);
  return out;
}

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

  bool gathers() const { return collective == planner::Collective::AllGather; }
  /// Rows of one rank's own A.
  int64_t aRows() const { return gathers() ? m / group : m; }
  uint64_t seed(int64_t rank, Operand operand) const {
    return inputSeed(setSeed, rank, operand);
  }
  /// Element (i, p) of `rank`'s own A.
  double a(int64_t rank, int64_t i, int64_t p) const {
    return inputElement(dtype, seed(rank, Operand::A), uint64_t(i * k + p));
  }
  /// Row `i` of the A that `rank`'s GEMM multiplies: its own, or for
  /// all-gather row i of the gathered A (every rank's shard).
  double gemmA(int64_t rank, int64_t i, int64_t p) const {
    if (!gathers())
      return a(rank, i, p);
    const int64_t shard = m / group;
    return a(i / shard, i % shard, p);
  }
  double b(int64_t rank, int64_t p, int64_t j) const {
    return inputElement(dtype, seed(rank, Operand::B), uint64_t(p * n + j));
  }
  double c0(int64_t rank, int64_t i, int64_t j) const {
    return inputElement(dtype, seed(rank, Operand::C0), uint64_t(i * n + j));
  }
  /// `rank`'s C0 + A.B at row i (of the full product), column j, in double.
  double reference(int64_t rank, int64_t i, int64_t j) const {
    double sum = c0(rank, i, j);
    for (int64_t p = 0; p < k; ++p)
      sum += gemmA(rank, i, p) * b(rank, p, j);
    return sum;
  }
  /// Every rank's shard of A in rank order (all-gather: what the gathered
  /// buffer holds, in row order) or this rank's A, as bytes.
  std::vector<char> gatheredA() const {
    std::vector<char> out;
    for (int64_t r = 0; r < group; ++r) {
      std::vector<char> shard =
          inputElements(dtype, seed(r, Operand::A), size_t(aRows() * k));
      out.insert(out.end(), shard.begin(), shard.end());
    }
    return out;
  }
};

/// Whether `got` is within a GEMM's tolerance of its double reference.
inline bool gemmAccepts(overlap_dtype dtype, double got, double reference) {
  return std::abs(got - reference) <=
         gemmTolerance(dtype) * (1.0 + std::abs(reference));
}

/// The first of `count` elements of `dtype` at `bytes` that is a NaN (an
/// output nobody wrote still holds the 0xff poison, a NaN in every type),
/// or -1.
inline int64_t firstNaN(overlap_dtype dtype, const char *bytes, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (dtype == OVERLAP_F32) {
      uint32_t f;
      std::memcpy(&f, bytes + 4 * i, 4);
      if ((f & 0x7f800000u) == 0x7f800000u && (f & 0x7fffffu))
        return int64_t(i);
      continue;
    }
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    const uint16_t exponent = dtype == OVERLAP_F16 ? 0x7c00 : 0x7f80;
    if ((h & exponent) == exponent && (h & uint16_t(~exponent & 0x7fff)))
      return int64_t(i);
  }
  return -1;
}

/// An element a sum over ranks must deliver, and how far it may be off.
struct Expected {
  double value = 0;
  double bound = 0;
  /// NaN (a poisoned element nobody wrote) is never accepted.
  bool accepts(double got) const { return std::abs(got - value) <= bound; }
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
inline Expected expectedSum(const RankProblem &problem, int64_t me,
                            double local, int64_t i, int64_t j) {
  const double tol = gemmTolerance(problem.dtype);
  Expected e{local, 0};
  double magnitude = std::abs(local);
  for (int64_t r = 0; r < problem.group; ++r) {
    if (r == me)
      continue;
    double ref = problem.reference(r, i, j);
    double off = tol * (1.0 + std::abs(ref));
    e.value += ref;
    e.bound += off;
    magnitude += std::abs(ref) + off;
  }
  e.bound +=
      double(problem.group - 1) * unitRoundoff(problem.dtype) * magnitude;
  return e;
}

/// The row of the full product that row `q` of a sum's result holds on rank
/// `me`: all-reduce delivers every row, reduce-scatter the rows of block
/// `me` (M/G rows).
inline int64_t sumResultRow(const TileLayout &layout, int64_t me, int64_t q) {
  return layout.getCollective() == planner::Collective::ReduceScatter
             ? me * layout.blockSize() + q
             : q;
}

//===----------------------------------------------------------------------===//
// Reports between ranks
//===----------------------------------------------------------------------===//

/// What a rank tells every other rank after a step (one all-gather): who
/// it is, the fingerprint of its arguments, a message (why it failed, ""
/// if it did not; in the argument check, its command line) and numbers
/// (timings). Encoded to a fixed size for a given count of numbers, so that
/// an all-gather of equal counts moves whole records.
struct RankReport {
  int32_t rank = 0;
  uint64_t fingerprint = 0;
  std::string message;
  std::vector<double> values;
};

/// Bytes of a message in a report; longer ones are cut.
constexpr size_t reportMessageBytes = 256;
constexpr uint32_t reportMagic = 0x5242564f; // "OVBR"

/// Bytes of an encoded report with `count` numbers: a multiple of 8.
inline size_t reportBytes(size_t count) {
  return 24 + reportMessageBytes + 8 * count;
}

inline std::vector<char> encodeReport(const RankReport &report) {
  std::vector<char> out(reportBytes(report.values.size()), 0);
  uint32_t magic = reportMagic, count = uint32_t(report.values.size()),
           hasMessage = report.message.empty() ? 0 : 1;
  std::memcpy(&out[0], &magic, 4);
  std::memcpy(&out[4], &report.rank, 4);
  std::memcpy(&out[8], &count, 4);
  std::memcpy(&out[12], &hasMessage, 4);
  std::memcpy(&out[16], &report.fingerprint, 8);
  std::memcpy(&out[24], report.message.data(),
              std::min(report.message.size(), reportMessageBytes - 1));
  if (count)
    std::memcpy(&out[24 + reportMessageBytes], report.values.data(),
                8 * size_t(count));
  return out;
}

/// False (with the reason) unless `bytes` is one whole report.
inline bool decodeReport(const char *bytes, size_t size, RankReport &report,
                         std::string &why) {
  uint32_t magic = 0, count = 0, hasMessage = 0;
  if (size < reportBytes(0)) {
    why = "a report of " + std::to_string(size) + " bytes is truncated";
    return false;
  }
  std::memcpy(&magic, bytes, 4);
  std::memcpy(&report.rank, bytes + 4, 4);
  std::memcpy(&count, bytes + 8, 4);
  std::memcpy(&hasMessage, bytes + 12, 4);
  std::memcpy(&report.fingerprint, bytes + 16, 8);
  if (magic != reportMagic) {
    why = "not a report (bad magic)";
    return false;
  }
  if (size != reportBytes(count)) {
    why = "a report of " + std::to_string(count) + " numbers in " +
          std::to_string(size) + " bytes";
    return false;
  }
  const char *message = bytes + 24;
  report.message.assign(message, strnlen(message, reportMessageBytes - 1));
  if (hasMessage && report.message.empty())
    report.message = "(an empty message)";
  report.values.resize(count);
  if (count)
    std::memcpy(report.values.data(), bytes + 24 + reportMessageBytes,
                8 * size_t(count));
  return true;
}

/// The slowest rank's value of every run: element-wise maximum over the
/// reports (a collective step ends when its last rank does). NaN wins, so
/// that a rank without a measurement is not hidden. Empty if the reports
/// disagree on the count.
inline std::vector<double>
maxOverRanks(const std::vector<RankReport> &reports) {
  if (reports.empty())
    return {};
  std::vector<double> out = reports[0].values;
  for (const RankReport &r : reports) {
    if (r.values.size() != out.size())
      return {};
    for (size_t i = 0; i < out.size(); ++i)
      if (std::isnan(r.values[i]) || r.values[i] > out[i])
        out[i] = r.values[i];
  }
  return out;
}

/// "" if no rank failed (sent a message); else the first failing rank's reason,
/// prefixed by its rank when there are several ranks, and how many others
/// failed.
inline std::string describeFailures(const std::vector<RankReport> &reports) {
  std::string first;
  size_t failed = 0;
  for (const RankReport &r : reports) {
    if (r.message.empty())
      continue;
    if (failed++ == 0)
      first = reports.size() == 1
                  ? r.message
                  : "rank " + std::to_string(r.rank) + ": " + r.message;
  }
  if (failed > 1)
    first += " (and " + std::to_string(failed - 1) + " more rank" +
             (failed > 2 ? "s" : "") + ")";
  return first;
}

/// FNV-1a of the arguments that decide what a rank does (everything but
/// `ignored` options and their values, e.g. the output files only rank 0
/// writes) and of `extra` (e.g. a profile's text): ranks that must issue the
/// same collectives in the same order must have equal fingerprints.
inline uint64_t argumentFingerprint(const std::vector<std::string> &args,
                                    const std::vector<std::string> &ignored,
                                    const std::string &extra) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto add = [&](const std::string &text) {
    for (unsigned char c : text)
      h = (h ^ c) * 0x100000001b3ULL;
    h = (h ^ 0xff) * 0x100000001b3ULL; // separator: "ab","c" != "a","bc"
  };
  for (size_t i = 0; i < args.size(); ++i) {
    if (std::find(ignored.begin(), ignored.end(), args[i]) != ignored.end()) {
      ++i;
      continue;
    }
    add(args[i]);
  }
  add(extra);
  return h;
}

/// The ranks whose fingerprint differs from rank 0's (the first report).
inline std::vector<int32_t>
mismatchedRanks(const std::vector<RankReport> &reports) {
  std::vector<int32_t> out;
  for (const RankReport &r : reports)
    if (r.fingerprint != reports.front().fingerprint)
      out.push_back(r.rank);
  return out;
}

} // namespace bench
} // namespace overlap

#endif // OVERLAP_TOOLS_BENCHRANKS_H

//===- RankProblem.cpp - Inputs and references of every rank ---*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "overlap/Calibration/RankProblem.h"
#include "overlap/Runtime/Numeric.h"

#include <cmath>
#include <cstring>

using namespace overlap;
using namespace overlap::calibration;

uint64_t calibration::mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t calibration::inputSeed(uint64_t setSeed, int64_t rank,
                                Operand operand) {
  // Not a symmetric combination (xor of two mixes would give set 0 / rank 1
  // the seed of set 1 / rank 0).
  return mix64(mix64(setSeed) + uint64_t(rank) * 3 + uint64_t(operand));
}

int calibration::significandBits(overlap_dtype dtype) {
  return dtype == OVERLAP_F32 ? 24 : dtype == OVERLAP_F16 ? 11 : 8;
}

double calibration::unitRoundoff(overlap_dtype dtype) {
  return std::ldexp(1.0, -significandBits(dtype));
}

double calibration::gemmTolerance(overlap_dtype dtype) {
  return dtype == OVERLAP_F32 ? 1e-4 : dtype == OVERLAP_F16 ? 4e-3 : 2e-2;
}

float calibration::inputElement(overlap_dtype dtype, uint64_t seed,
                                uint64_t index) {
  const int bits = significandBits(dtype);
  const int64_t half = int64_t(1) << (bits - 1);
  int64_t k = int64_t(mix64(seed ^ mix64(index)) >> (64 - bits)) - half;
  if (k == 0)
    k = half / 2; // 0.5
  // Exact: half is a power of 2.
  return float(double(k) / double(half));
}

void calibration::storeExact(overlap_dtype dtype, float value, char *dst) {
  if (dtype == OVERLAP_F32) {
    std::memcpy(dst, &value, 4);
    return;
  }
  // The runtime's conversions round to nearest even: exact values are kept.
  uint16_t h = dtype == OVERLAP_BF16 ? runtime::f32ToBf16(value)
                                     : runtime::f32ToF16(value);
  std::memcpy(dst, &h, 2);
}

std::vector<char> calibration::inputElements(overlap_dtype dtype, uint64_t seed,
                                             size_t count, size_t first) {
  const size_t elt = dtype == OVERLAP_F32 ? 4 : 2;
  std::vector<char> out(count * elt);
  for (size_t i = 0; i < count; ++i)
    storeExact(dtype, inputElement(dtype, seed, first + i), &out[i * elt]);
  return out;
}

float calibration::decodeElement(overlap_dtype dtype, const char *bytes) {
  if (dtype == OVERLAP_F32) {
    float f;
    std::memcpy(&f, bytes, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes, 2);
  return dtype == OVERLAP_BF16 ? runtime::bf16ToF32(h) : runtime::f16ToF32(h);
}

float calibration::elementAt(const std::vector<char> &bytes,
                             overlap_dtype dtype, size_t i) {
  return decodeElement(dtype, &bytes[i * (dtype == OVERLAP_F32 ? 4 : 2)]);
}

double RankProblem::a(int64_t rank, int64_t i, int64_t p) const {
  return inputElement(dtype, seed(rank, Operand::A), uint64_t(i * k + p));
}

double RankProblem::gemmA(int64_t rank, int64_t i, int64_t p) const {
  const int64_t block = m / group;
  if (dispatches())
    return a(i / block, rank * block + i % block, p);
  if (!gathers())
    return a(rank, i, p);
  return a(i / block, i % block, p);
}

double RankProblem::b(int64_t rank, int64_t p, int64_t j) const {
  return inputElement(dtype, seed(rank, Operand::B), uint64_t(p * n + j));
}

double RankProblem::c0(int64_t rank, int64_t i, int64_t j) const {
  return inputElement(dtype, seed(rank, Operand::C0), uint64_t(i * n + j));
}

double RankProblem::reference(int64_t rank, int64_t i, int64_t j) const {
  double sum = c0(rank, i, j);
  for (int64_t p = 0; p < k; ++p)
    sum += gemmA(rank, i, p) * b(rank, p, j);
  return sum;
}

std::vector<char> RankProblem::gatheredA() const {
  std::vector<char> out;
  for (int64_t r = 0; r < group; ++r) {
    std::vector<char> shard =
        inputElements(dtype, seed(r, Operand::A), size_t(aRows() * k));
    out.insert(out.end(), shard.begin(), shard.end());
  }
  return out;
}

std::vector<char> RankProblem::dispatchedA(int64_t rank) const {
  const int64_t block = m / group;
  std::vector<char> out;
  for (int64_t r = 0; r < group; ++r) {
    std::vector<char> rows =
        inputElements(dtype, seed(r, Operand::A), size_t(block * k),
                      size_t(rank * block * k));
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

bool calibration::gemmAccepts(overlap_dtype dtype, double got,
                              double reference) {
  return std::abs(got - reference) <=
         gemmTolerance(dtype) * (1.0 + std::abs(reference));
}

int64_t calibration::firstNaN(overlap_dtype dtype, const char *bytes,
                              size_t count) {
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

bool ExpectedElement::accepts(double got) const {
  return std::abs(got - value) <= bound;
}

ExpectedElement calibration::expectedSum(const RankProblem &problem, int64_t me,
                                         double local, int64_t i, int64_t j) {
  const double tol = gemmTolerance(problem.dtype);
  ExpectedElement e{local, 0};
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

int64_t calibration::sumResultRow(const planner::TileLayout &layout, int64_t me,
                                  int64_t q) {
  return layout.getCollective() == planner::Collective::ReduceScatter
             ? me * layout.blockSize() + q
             : q;
}

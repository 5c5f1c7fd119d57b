//===- NumericTest.cpp - f16/bf16 conversions and status names -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//

#include "TestHelpers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace overlap::test;

namespace {

/// The nearest representable value to `x` among all finite values of a
/// 16-bit format (ties to the even bit pattern), computed by brute force
/// over its sorted positive values; infinity beyond the rounding limit.
uint16_t nearestReference(float x, float (*decode)(uint16_t), uint16_t maxBits,
                          double limit) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double ax = std::fabs(static_cast<double>(x));
  uint16_t inf = static_cast<uint16_t>(maxBits + 1);
  if (ax >= limit)
    return sign | inf;
  // Positive patterns are ordered like their values: binary search.
  uint16_t lo = 0, hi = maxBits;
  while (hi - lo > 1) {
    uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    if (decode(mid) <= ax)
      lo = mid;
    else
      hi = mid;
  }
  double dlo = ax - decode(lo), dhi = decode(hi) - ax;
  uint16_t pick;
  if (dlo < dhi)
    pick = lo;
  else if (dhi < dlo)
    pick = hi;
  else
    pick = (lo & 1) ? hi : lo;
  if (decode(hi) <= ax) // ax is exactly maxBits' value
    pick = hi;
  return sign | pick;
}

uint16_t f16Reference(float x) {
  // Halfway between 65504 and 65536 rounds to infinity (65504 is odd).
  return nearestReference(x, overlap_f16_to_f32, 0x7bff, 65520.0);
}

uint16_t bf16Reference(float x) {
  double maxValue = overlap_bf16_to_f32(0x7f7f);
  double ulp = maxValue - overlap_bf16_to_f32(0x7f7e);
  return nearestReference(x, overlap_bf16_to_f32, 0x7f7f, maxValue + ulp / 2);
}

std::vector<float> interestingFloats() {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -1.0f,
                               65504.0f,
                               65519.0f,
                               65520.0f,
                               65536.0f,
                               1e-8f,
                               2.9802322e-8f /* 2^-25 */,
                               5.9604645e-8f /* 2^-24 */,
                               6.1035156e-5f,
                               6.097555e-5f,
                               3.3895314e38f,
                               1.0009766f,
                               1.0004883f /* tie in f16 */,
                               1.00390625f,
                               1.001953125f /* tie in bf16 */,
                               3e38f};
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isnan(f))
      values.push_back(f);
  }
  // Dense around the f16 subnormal and normal ranges.
  std::uniform_real_distribution<float> small(-7e-5f, 7e-5f),
      mid(-70000, 70000);
  for (int i = 0; i < 100000; ++i) {
    values.push_back(small(rng));
    values.push_back(mid(rng));
  }
  return values;
}

TEST(Numeric, F16RoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    uint16_t h = static_cast<uint16_t>(bits);
    float f = overlap_f16_to_f32(h);
    uint16_t back = overlap_f32_to_f16(f);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << bits;
      EXPECT_EQ(back & 0x7e00, 0x7e00) << "NaN must stay a quiet NaN " << bits;
    } else {
      EXPECT_EQ(back, h) << std::hex << bits;
    }
  }
}

TEST(Numeric, BF16RoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    uint16_t h = static_cast<uint16_t>(bits);
    float f = overlap_bf16_to_f32(h);
    uint16_t back = overlap_f32_to_bf16(f);
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f))
      EXPECT_TRUE(std::isnan(overlap_bf16_to_f32(back))) << std::hex << bits;
    else
      EXPECT_EQ(back, h) << std::hex << bits;
  }
}

/// How many of interestingFloats() `convert` rounds other than `reference`
/// does; the first of them are reported, named `type`.
int roundingFailures(const char *type, uint16_t (*convert)(float),
                     uint16_t (*reference)(float)) {
  int failures = 0;
  for (float x : interestingFloats()) {
    uint16_t got = convert(x), want = reference(x);
    if (got != want && ++failures < 10)
      ADD_FAILURE() << type << "(" << x << "): got 0x" << std::hex << got
                    << ", want 0x" << want;
  }
  return failures;
}

TEST(Numeric, F16RoundsToNearestEven) {
  int failures = roundingFailures("f16", overlap_f32_to_f16, f16Reference);
#ifdef __FLT16_MAX__
  // The compiler's own conversion, where it has one, must agree.
  for (float x : interestingFloats()) {
    uint16_t got = overlap_f32_to_f16(x);
    _Float16 native = static_cast<_Float16>(x);
    uint16_t nativeBits;
    std::memcpy(&nativeBits, &native, 2);
    if (got != nativeBits && ++failures < 10)
      ADD_FAILURE() << "f16(" << x << "): got 0x" << std::hex << got
                    << ", _Float16 gives 0x" << nativeBits;
  }
#endif
  EXPECT_EQ(failures, 0);
}

TEST(Numeric, BF16RoundsToNearestEven) {
  EXPECT_EQ(roundingFailures("bf16", overlap_f32_to_bf16, bf16Reference), 0);
}

TEST(Numeric, SpecialValues) {
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(overlap_f32_to_f16(inf), 0x7c00);
  EXPECT_EQ(overlap_f32_to_f16(-inf), 0xfc00);
  EXPECT_TRUE(std::isnan(overlap_f16_to_f32(overlap_f32_to_f16(nan()))));
  EXPECT_EQ(overlap_f32_to_bf16(inf), 0x7f80);
  EXPECT_TRUE(std::isnan(overlap_bf16_to_f32(overlap_f32_to_bf16(nan()))));
  EXPECT_EQ(overlap_f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(overlap_f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(overlap_f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(overlap_f32_to_f16(65520.0f), 0x7c00);
}

TEST(Numeric, DtypeSizesAndStatusNames) {
  EXPECT_EQ(overlap_dtype_size(OVERLAP_F32), 4u);
  EXPECT_EQ(overlap_dtype_size(OVERLAP_F16), 2u);
  EXPECT_EQ(overlap_dtype_size(OVERLAP_BF16), 2u);
  EXPECT_STREQ(overlap_status_name(OVERLAP_SUCCESS), "OVERLAP_SUCCESS");
  EXPECT_STREQ(overlap_status_name(OVERLAP_ERROR_TIMEOUT),
               "OVERLAP_ERROR_TIMEOUT");
  EXPECT_STREQ(overlap_status_name(OVERLAP_ERROR_ABORTED),
               "OVERLAP_ERROR_ABORTED");
}

} // namespace

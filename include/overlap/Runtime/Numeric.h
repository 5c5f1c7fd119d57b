//===- Numeric.h - f16/bf16 conversions and element access -----*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// Backend-neutral number helpers. f16 and bf16 are uint16_t bit patterns;
// every conversion from f32 rounds to nearest even and keeps NaN a NaN, so
// results do not depend on the compiler's or the CPU's half support.
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_RUNTIME_NUMERIC_H
#define OVERLAP_RUNTIME_NUMERIC_H

#include "overlap/Runtime/overlap_runtime.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace overlap {
namespace runtime {

inline uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

inline uint16_t f32ToF16(float value) {
  uint32_t x = bitsOf(value);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) {
    // Inf stays Inf; NaN keeps the top payload bits and is made quiet.
    if (x == 0x7f800000u)
      return sign | 0x7c00u;
    return sign | 0x7e00u | static_cast<uint16_t>((x >> 13) & 0x3ffu);
  }
  // 65520 is halfway between the largest half (65504) and 2^16; ties go to
  // the even neighbour, which is infinity.
  if (x >= 0x477ff000u)
    return sign | 0x7c00u;
  if (x < 0x38800000u) {
    // Result is subnormal (or zero): shift the 24-bit significand right so
    // that one unit is 2^-24, rounding to nearest even by hand.
    if (x < 0x33000000u) // below half of the smallest subnormal
      return sign;
    uint32_t exponent = x >> 23;
    uint32_t mantissa = (x & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exponent; // 14..24 for these inputs
    uint32_t result = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (result & 1u)))
      ++result;
    return sign | static_cast<uint16_t>(result);
  }
  // Normal: rebias the exponent, round the 13 dropped bits to even. A carry
  // out of the mantissa correctly bumps the exponent.
  uint32_t odd = (x >> 13) & 1u;
  x += 0xc8000fffu + odd; // (15 - 127) << 23, plus half an ulp minus one
  return sign | static_cast<uint16_t>(x >> 13);
}

inline float f16ToF32(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    if (mantissa == 0)
      return floatOf(sign);
    // Subnormal: normalize.
    uint32_t e = 113; // 127 - 15 + 1
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      --e;
    }
    mantissa &= 0x3ffu;
    return floatOf(sign | (e << 23) | (mantissa << 13));
  }
  if (exponent == 31)
    return floatOf(sign | 0x7f800000u | (mantissa << 13));
  return floatOf(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline uint16_t f32ToBf16(float value) {
  uint32_t x = bitsOf(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: keep it a quiet NaN
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

inline float bf16ToF32(uint16_t bits) {
  return floatOf(static_cast<uint32_t>(bits) << 16);
}

/// Element access by dtype, for templates over element types.
template <overlap_dtype T> struct Elem;
template <> struct Elem<OVERLAP_F32> {
  using Storage = float;
  static float load(float v) { return v; }
  static float store(float v) { return v; }
};
template <> struct Elem<OVERLAP_F16> {
  using Storage = uint16_t;
  static float load(uint16_t v) { return f16ToF32(v); }
  static uint16_t store(float v) { return f32ToF16(v); }
};
template <> struct Elem<OVERLAP_BF16> {
  using Storage = uint16_t;
  static float load(uint16_t v) { return bf16ToF32(v); }
  static uint16_t store(float v) { return f32ToBf16(v); }
};

/// "f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64" (the names the
/// runtime's messages use), or "dtype <n>" for a value that is none.
inline std::string dtypeName(overlap_dtype dtype) {
  static const char *const names[] = {"f32", "f16", "bf16", "f64",
                                      "i8",  "i16", "i32",  "i64"};
  if (dtype >= OVERLAP_F32 && dtype <= OVERLAP_I64)
    return names[dtype];
  return "dtype " + std::to_string(int(dtype));
}

} // namespace runtime
} // namespace overlap

#endif // OVERLAP_RUNTIME_NUMERIC_H

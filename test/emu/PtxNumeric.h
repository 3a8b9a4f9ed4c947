//===- PtxNumeric.h - PTX's number formats on the host -----------*- C++ -*-===//
//
// Half, bfloat16 and tf32 conversions with round-to-nearest-even, and the
// directed roundings PTX's .rz/.rm/.rp ask of f32 results, computed from
// an exact-enough double so the host's rounding mode is never touched.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_EMU_PTXNUMERIC_H
#define KILN_TEST_EMU_PTXNUMERIC_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln::emu {

inline float bitsToF32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint32_t f32ToBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
inline double bitsToF64(uint64_t b) {
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}
inline uint64_t f64ToBits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

inline float halfToF32(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp((float)man, -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp((float)(man | 0x400), (int)exp - 25);
  return sign ? -v : v;
}

inline uint16_t f32ToHalf(float f) {
  uint32_t x = f32ToBits(f);
  uint16_t sign = (x >> 16) & 0x8000;
  float a = std::fabs(f);
  if (std::isnan(f))
    return sign | 0x7e00;
  if (a >= 65520.0f) // rounds to infinity
    return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -14)) { // subnormal: multiples of 2^-24
    float q = std::nearbyint(a * 16777216.0f); // ties to even (default mode)
    return sign | (uint16_t)q;
  }
  int e;
  float m = std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  float scaled = std::nearbyint(std::ldexp(m, 11)); // 11 significant bits
  if (scaled >= 2048.0f) {
    scaled /= 2;
    ++e;
  }
  uint16_t exp = (uint16_t)(e - 1 + 15);
  if (exp >= 31)
    return sign | 0x7c00;
  return sign | (uint16_t)(exp << 10) | ((uint16_t)scaled & 0x3ff);
}

inline float bf16ToF32(uint16_t h) { return bitsToF32((uint32_t)h << 16); }

inline uint16_t f32ToBf16(float f) {
  uint32_t x = f32ToBits(f);
  if (std::isnan(f))
    return (uint16_t)((x >> 16) | 0x40);
  uint32_t lsb = (x >> 16) & 1;
  return (uint16_t)((x + 0x7fff + lsb) >> 16);
}

/// Rounds to tf32 (10 mantissa bits), ties away from zero (cvt.rna.tf32).
inline uint32_t f32ToTf32(float f) {
  uint32_t x = f32ToBits(f);
  if (std::isnan(f) || std::isinf(f))
    return x;
  return (x + 0x1000) & 0xffffe000u;
}

/// A double rounded to f32 by `mode`: 1 nearest even, 2 toward zero,
/// 3 toward -inf, 4 toward +inf.
inline float roundF32(double d, int mode) {
  float f = (float)d;
  if (mode <= 1 || std::isnan(d) || std::isinf(f))
    return f;
  double back = f;
  if (mode == 3 && back > d)
    f = std::nextafter(f, -INFINITY);
  else if (mode == 4 && back < d)
    f = std::nextafter(f, INFINITY);
  else if (mode == 2 && std::fabs(back) > std::fabs(d))
    f = std::nextafter(f, 0.0f);
  return f;
}

} // namespace kiln::emu

#endif // KILN_TEST_EMU_PTXNUMERIC_H

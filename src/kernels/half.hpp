// IEEE binary16 and bfloat16 conversions, rounding to nearest even. Written once for host and device.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define CHORUS_HD __host__ __device__
#else
#define CHORUS_HD
#endif

namespace chorus::kernels {

CHORUS_HD inline uint32_t floatBits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}
CHORUS_HD inline float bitsFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

/// float -> binary16, round to nearest even; NaN stays NaN, overflow becomes infinity.
CHORUS_HD inline uint16_t floatToHalf(float f) {
  constexpr uint32_t kF32Infinity = 255u << 23;
  constexpr uint32_t kF16Overflow = (127u + 16u) << 23;  // 65536: rounds to infinity from here on
  constexpr uint32_t kDenormMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  uint32_t x = floatBits(f);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint16_t out;
  if (x >= kF16Overflow) {
    out = x > kF32Infinity ? 0x7e00 : 0x7c00;
  } else if (x < (113u << 23)) {
    // Subnormal or zero: adding the magic number lets the FPU do the rounding.
    out = static_cast<uint16_t>(floatBits(bitsFloat(x) + bitsFloat(kDenormMagic)) - kDenormMagic);
  } else {
    const uint32_t mantissaOdd = (x >> 13) & 1u;
    x += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu;
    x += mantissaOdd;
    out = static_cast<uint16_t>(x >> 13);
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

CHORUS_HD inline float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // 2^-24
    return bitsFloat(floatBits(magnitude) | sign);
  }
  if (exponent == 31) return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  return bitsFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

/// float -> bfloat16, round to nearest even; NaN stays a quiet NaN.
CHORUS_HD inline uint16_t floatToBfloat16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

CHORUS_HD inline float bfloat16ToFloat(uint16_t b) { return bitsFloat(static_cast<uint32_t>(b) << 16); }

}  // namespace chorus::kernels

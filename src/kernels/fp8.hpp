// The two 8-bit float formats of NCCL 2.24+ (ncclFloat8e4m3, ncclFloat8e5m2), as CUDA's __nv_fp8_e4m3 and
// __nv_fp8_e5m2 define them. Written once for host and device.
//
// E4M3: bias 7, no infinities, 0x7f/0xff are NaN, largest finite 448. E5M2: bias 15, IEEE-like with infinities,
// largest finite 57344. Conversions from float round to nearest even and saturate to the largest finite value
// (CUDA's __NV_SATFINITE, what the __nv_fp8 types' constructors use): an infinity or an overflow becomes the
// largest finite value of its sign, a NaN becomes 0x7f.
#pragma once

#include <cstdint>

#include "kernels/half.hpp"

namespace chorus::kernels {

template <int kExponentBits, int kMantissaBits, uint8_t kLargestFinite>
struct Fp8Format {
  static constexpr int kBias = (1 << (kExponentBits - 1)) - 1;
  static constexpr int kMinNormalExponent = 1 - kBias;

  CHORUS_HD static uint8_t fromFloat(float f) {
    uint32_t x = floatBits(f);
    const uint8_t sign = static_cast<uint8_t>((x >> 24) & 0x80u);
    x &= 0x7fffffffu;
    if (x > 0x7f800000u) return 0x7f;  // NaN, whatever its sign
    const int exponent = static_cast<int>(x >> 23) - 127;
    if (exponent > kBias + 1) return sign | kLargestFinite;  // far beyond the range, infinity included
    const uint32_t significand = (x & 0x7fffffu) | (x >= 0x800000u ? 0x800000u : 0u);
    // Keep kMantissaBits bits after the leading one; below the normal range, fewer (a subnormal result).
    int shift = 23 - kMantissaBits;
    if (exponent < kMinNormalExponent) shift += kMinNormalExponent - exponent;
    if (shift > 25) return sign;  // below half the smallest subnormal: zero
    uint32_t kept = significand >> shift;
    const uint32_t rest = significand & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (kept & 1u))) ++kept;  // a carry moves into the exponent field
    const uint32_t bits =
        exponent < kMinNormalExponent ? kept : (static_cast<uint32_t>(exponent + kBias - 1) << kMantissaBits) + kept;
    return sign | static_cast<uint8_t>(bits > kLargestFinite ? kLargestFinite : bits);
  }

  CHORUS_HD static float toFloat(uint8_t b) {
    const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
    const uint32_t exponentField = (b & 0x7fu) >> kMantissaBits;
    const uint32_t mantissa = b & ((1u << kMantissaBits) - 1u);
    constexpr uint32_t kTopExponent = (1u << kExponentBits) - 1u;
    if (exponentField == kTopExponent) {
      if constexpr (kExponentBits == 4) {
        if (mantissa == 7u) return bitsFloat(sign | 0x7fc00000u);  // E4M3's only NaN; the rest of the row is finite
      } else {
        return bitsFloat(sign | 0x7f800000u | (mantissa ? 0x400000u : 0u));  // infinity or NaN
      }
    }
    if (exponentField == 0) {
      // mantissa * 2^(kMinNormalExponent - kMantissaBits), exact in float
      const float unit = bitsFloat(static_cast<uint32_t>(127 + kMinNormalExponent - kMantissaBits) << 23);
      return bitsFloat(floatBits(static_cast<float>(mantissa) * unit) | sign);
    }
    return bitsFloat(sign | ((exponentField - kBias + 127u) << 23) | (mantissa << (23 - kMantissaBits)));
  }
};

using Float8e4m3 = Fp8Format<4, 3, 0x7e>;
using Float8e5m2 = Fp8Format<5, 2, 0x7b>;

CHORUS_HD inline uint8_t floatToE4m3(float f) { return Float8e4m3::fromFloat(f); }
CHORUS_HD inline float e4m3ToFloat(uint8_t b) { return Float8e4m3::toFloat(b); }
CHORUS_HD inline uint8_t floatToE5m2(float f) { return Float8e5m2::fromFloat(f); }
CHORUS_HD inline float e5m2ToFloat(uint8_t b) { return Float8e5m2::toFloat(b); }

}  // namespace chorus::kernels

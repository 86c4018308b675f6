// chorus's 8-bit float conversions (kernels/fp8.hpp) against CUDA's own (cuda_fp8.h, its host code): every fp8
// value decoded, and every float whose upper 16 bits are any of the 65536 patterns, with low bits that sit on, just
// below and just above each rounding boundary, encoded. Both must be bitwise CUDA's.
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/fp8.hpp"

namespace {

using chorus::kernels::bitsFloat;
using chorus::kernels::floatBits;

template <typename Encode>
void expectEncodesAsCuda(Encode ours, __nv_fp8_interpretation_t kind, const char* name) {
  const uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x7fff, 0x8000, 0x8001, 0xffff};
  long wrong = 0;
  for (uint32_t high = 0; high < 65536; ++high) {
    for (uint32_t low : lows) {
      const float f = bitsFloat(high << 16 | low);
      const uint8_t theirs = __nv_cvt_float_to_fp8(f, __NV_SATFINITE, kind);
      if (ours(f) != theirs && wrong++ < 5) {
        ADD_FAILURE() << name << ": float bits 0x" << std::hex << (high << 16 | low) << " gave 0x" << int(ours(f))
                      << ", CUDA 0x" << int(theirs);
      }
    }
  }
  EXPECT_EQ(wrong, 0) << name;
}

template <typename Decode>
void expectDecodesAsCuda(Decode ours, __nv_fp8_interpretation_t kind, const char* name) {
  for (int b = 0; b < 256; ++b) {
    const float mine = ours(static_cast<uint8_t>(b));
    const float theirs = static_cast<float>(__half(__nv_cvt_fp8_to_halfraw(static_cast<uint8_t>(b), kind)));
    if (mine != mine) {
      EXPECT_NE(theirs, theirs) << name << " 0x" << std::hex << b << ": NaN, CUDA " << theirs;
    } else {
      EXPECT_EQ(floatBits(mine), floatBits(theirs))
          << name << " 0x" << std::hex << b << ": " << mine << ", CUDA " << theirs;
    }
  }
}

TEST(Fp8Conversion, E4m3EncodesAsCuda) { expectEncodesAsCuda(chorus::kernels::floatToE4m3, __NV_E4M3, "e4m3"); }
TEST(Fp8Conversion, E5m2EncodesAsCuda) { expectEncodesAsCuda(chorus::kernels::floatToE5m2, __NV_E5M2, "e5m2"); }
TEST(Fp8Conversion, E4m3DecodesAsCuda) { expectDecodesAsCuda(chorus::kernels::e4m3ToFloat, __NV_E4M3, "e4m3"); }
TEST(Fp8Conversion, E5m2DecodesAsCuda) { expectDecodesAsCuda(chorus::kernels::e5m2ToFloat, __NV_E5M2, "e5m2"); }

}  // namespace

// Reduction kernels and the 16- and 8-bit float conversions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/copy.hpp"
#include "kernels/fp8.hpp"
#include "kernels/half.hpp"
#include "kernels/reduce.hpp"

namespace chorus::kernels {
namespace {

TEST(Half, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(floatToHalf(f), h) << "half bits " << h;
  }
}

TEST(Half, MatchesTheCompilersConversion) {
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 2000000; ++i) {
    float f = bitsFloat(bits(gen));
    if (std::isnan(f)) continue;
    _Float16 reference = static_cast<_Float16>(f);
    uint16_t expected;
    memcpy(&expected, &reference, 2);
    ASSERT_EQ(floatToHalf(f), expected) << "float " << f;
    ASSERT_EQ(halfToFloat(expected), static_cast<float>(reference));
  }
}

TEST(Half, TiesRoundToEven) {
  // 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): even mantissa wins.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // rounds up to infinity
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // halfway to the smallest subnormal: even
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -25)), 0x0001);
}

TEST(Bfloat16, RoundsToNearestEven) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie, even stays
  EXPECT_EQ(floatToBfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(floatToBfloat16(1.0f + std::ldexp(1.0f, -9) * 3), 0x3f81);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBfloat16(std::nanf("")))));
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = bfloat16ToFloat(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(floatToBfloat16(f), b);
    }
  }
}

template <typename T>
void expectReduce(DataType type, RedOpKind op, std::vector<T> a, std::vector<T> b, std::vector<T> want) {
  std::vector<T> out(a.size());
  reduceFunction(type, op)(out.data(), a.data(), b.data(), a.size());
  EXPECT_EQ(out, want);
  reduceFunction(type, op)(a.data(), a.data(), b.data(), a.size());  // in place
  EXPECT_EQ(a, want);
}

// copyShort's overlapping moves: every size up to 64 bytes lands whole, at every offset, and writes nothing past it.
TEST(CopyShort, EverySizeUpTo64CopiesItsBytesAndNoMore) {
  std::vector<unsigned char> from(96), to(96);
  for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<unsigned char>(i * 7 + 1);
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t bytes = 0; bytes <= 64; ++bytes) {
      std::fill(to.begin(), to.end(), 0xee);
      kernels::copyShort(to.data() + offset, from.data() + offset, bytes);
      for (size_t i = 0; i < to.size(); ++i) {
        const bool inside = i >= offset && i < offset + bytes;
        ASSERT_EQ(to[i], inside ? from[i] : 0xee) << "bytes " << bytes << " offset " << offset << " at " << i;
      }
    }
  }
}

TEST(Reduce, IntegerOps) {
  expectReduce<int32_t>(DataType::kInt32, RedOpKind::kSum, {1, -2, 3}, {4, 5, -6}, {5, 3, -3});
  expectReduce<int32_t>(DataType::kInt32, RedOpKind::kProd, {2, -2, 3}, {4, 5, -6}, {8, -10, -18});
  expectReduce<uint8_t>(DataType::kUint8, RedOpKind::kSum, {250, 1}, {10, 2}, {4, 3});  // wraps
  expectReduce<int64_t>(DataType::kInt64, RedOpKind::kMax, {1, -7}, {-1, 9}, {1, 9});
  expectReduce<uint64_t>(DataType::kUint64, RedOpKind::kMin, {1, 7}, {3, 2}, {1, 2});
}

TEST(Reduce, FloatOps) {
  expectReduce<float>(DataType::kFloat32, RedOpKind::kSum, {1.5f, 2}, {0.25f, -4}, {1.75f, -2});
  expectReduce<double>(DataType::kFloat64, RedOpKind::kProd, {1.5, 2}, {4, -4}, {6, -8});
  expectReduce<float>(DataType::kFloat32, RedOpKind::kMax, {1, -3}, {2, -4}, {2, -3});
}

TEST(Reduce, HalfAddsInFloatAndRoundsOnce) {
  std::vector<uint16_t> a = {floatToHalf(1.0f), floatToHalf(2048.0f)}, b = {floatToHalf(0.5f), floatToHalf(1.0f)};
  std::vector<uint16_t> out(2);
  reduceFunction(DataType::kFloat16, RedOpKind::kSum)(out.data(), a.data(), b.data(), 2);
  EXPECT_EQ(halfToFloat(out[0]), 1.5f);
  EXPECT_EQ(halfToFloat(out[1]), 2048.0f);  // 2049 is a tie between 2048 and 2050: even
}

// The vectorized binary16 path (F16C where the processor has it) must give the bits of the scalar definition.
TEST(Reduce, HalfKernelEqualsTheScalarDefinition) {
  std::mt19937 gen(11);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffff);
  const size_t n = 100003;
  std::vector<uint16_t> a(n), b(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    do a[i] = static_cast<uint16_t>(bits(gen));
    while (std::isnan(halfToFloat(a[i])));
    do b[i] = static_cast<uint16_t>(bits(gen));
    while (std::isnan(halfToFloat(b[i])));
  }
  for (RedOpKind op : {RedOpKind::kSum, RedOpKind::kProd, RedOpKind::kMax, RedOpKind::kMin}) {
    reduceFunction(DataType::kFloat16, op)(out.data(), a.data(), b.data(), n);
    for (size_t i = 0; i < n; ++i) {
      float x = halfToFloat(a[i]), y = halfToFloat(b[i]);
      float r = op == RedOpKind::kSum    ? x + y
                : op == RedOpKind::kProd ? x * y
                : op == RedOpKind::kMax  ? (x > y ? x : y)
                                         : (x < y ? x : y);
      uint16_t want = floatToHalf(r);
      if (std::isnan(r)) continue;  // inf - inf: any NaN is fine
      // max/min of +0 and -0 may return either zero.
      if ((op == RedOpKind::kMax || op == RedOpKind::kMin) && x == y) continue;
      ASSERT_EQ(out[i], want) << "op " << static_cast<int>(op) << " element " << i;
    }
  }
}

TEST(Reduce, ScaleAndDivide) {
  std::vector<float> v = {1, 2, 3};
  scale(v.data(), v.data(), 3, DataType::kFloat32, 2.0);
  EXPECT_EQ(v, (std::vector<float>{2, 4, 6}));
  std::vector<int32_t> i = {7, -7};
  divide(i.data(), 2, DataType::kInt32, 2);
  EXPECT_EQ(i, (std::vector<int32_t>{3, -3}));
}

// 8-bit floats reduce in float and round once, to nearest even, saturating at the largest finite value.
TEST(Reduce, Float8RoundsToNearestEvenAndSaturates) {
  const uint8_t one = floatToE4m3(1.0f), oneEighth = floatToE4m3(0.125f), sixteenth = floatToE4m3(0.0625f);
  EXPECT_EQ(one, 0x38);
  EXPECT_EQ(floatToE4m3(448.0f), 0x7e);
  EXPECT_EQ(floatToE4m3(1e9f), 0x7e);       // overflow saturates
  EXPECT_EQ(floatToE4m3(-INFINITY), 0xfe);  // so does an infinity
  EXPECT_EQ(floatToE5m2(1.0f), 0x3c);
  EXPECT_EQ(floatToE5m2(INFINITY), 0x7b);      // 57344
  EXPECT_EQ(e4m3ToFloat(0x01), 0.001953125f);  // the smallest subnormal, 2^-9
  const uint8_t nineEighths = floatToE4m3(1.125f);
  std::vector<uint8_t> a = {one, nineEighths, 0x7e, one}, b = {sixteenth, sixteenth, 0x7e, oneEighth}, out(4);
  reduceFunction(DataType::kFloat8e4m3, RedOpKind::kSum)(out.data(), a.data(), b.data(), 4);
  EXPECT_EQ(out[0], one);                 // 1.0625 is halfway: to the even 1.0
  EXPECT_EQ(out[1], floatToE4m3(1.25f));  // 1.1875 is halfway: to the even 1.25
  EXPECT_EQ(out[2], 0x7e);                // 448 + 448 saturates at 448
  EXPECT_EQ(out[3], nineEighths);
  reduceFunction(DataType::kFloat8e5m2, RedOpKind::kMax)(out.data(), a.data(), b.data(), 1);
  EXPECT_EQ(e5m2ToFloat(out[0]), e5m2ToFloat(a[0]) > e5m2ToFloat(b[0]) ? e5m2ToFloat(a[0]) : e5m2ToFloat(b[0]));
}

TEST(Reduce, EveryTypeAndOpHasAKernel) {
  for (int t = 0; t < kNumDataTypes; ++t)
    for (int op = 0; op <= static_cast<int>(RedOpKind::kPreMulSum); ++op)
      EXPECT_NE(reduceFunction(static_cast<DataType>(t), static_cast<RedOpKind>(op)), nullptr);
}

}  // namespace
}  // namespace chorus::kernels

TEST(Copy, StreamingCopyMatchesMemcpyAtAnyAlignmentAndLength) {
  std::vector<unsigned char> src(4096 + 64), dst(4096 + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  for (size_t srcOffset : {0, 1, 8, 15}) {
    for (size_t dstOffset : {0, 3, 16, 17}) {
      for (size_t bytes : {0, 1, 15, 16, 63, 64, 65, 1000, 4096}) {
        std::fill(dst.begin(), dst.end(), 0xee);
        chorus::kernels::streamingCopy(dst.data() + dstOffset, src.data() + srcOffset, bytes);
        ASSERT_EQ(memcmp(dst.data() + dstOffset, src.data() + srcOffset, bytes), 0) << srcOffset << " " << dstOffset;
        // Nothing outside the destination range is touched.
        for (size_t i = 0; i < dstOffset; ++i) ASSERT_EQ(dst[i], 0xee);
        for (size_t i = dstOffset + bytes; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xee);
      }
    }
  }
}

// kernels::copy takes its own loop where the destination is 1-63 bytes ahead of the source modulo 4 KiB: every such
// distance, sizes around the 4 KiB from which it does, and both ends of the destination untouched.
TEST(Copy, CopyMatchesMemcpyWhereTheDestinationIsJustAheadModulo4KiB) {
  std::vector<unsigned char> src(3 * 4096 + 256), dst(3 * 4096 + 512);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  const uintptr_t dstPage = reinterpret_cast<uintptr_t>(dst.data()) % 4096;
  for (size_t srcOffset : {0, 5, 64}) {
    const uintptr_t srcPage = (reinterpret_cast<uintptr_t>(src.data()) + srcOffset) % 4096;
    for (size_t ahead = 0; ahead < 80; ++ahead) {
      const size_t dstOffset = (srcPage + ahead + 4096 - dstPage) % 4096;  // dst - src == ahead modulo 4 KiB
      for (size_t bytes : {4095, 4096, 4097, 8191 + 64}) {
        std::fill(dst.begin(), dst.end(), 0xee);
        chorus::kernels::copy(dst.data() + dstOffset, src.data() + srcOffset, bytes);
        ASSERT_EQ(memcmp(dst.data() + dstOffset, src.data() + srcOffset, bytes), 0) << ahead << " " << bytes;
        for (size_t i = 0; i < dstOffset; ++i) ASSERT_EQ(dst[i], 0xee);
        for (size_t i = dstOffset + bytes; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xee);
      }
    }
  }
}

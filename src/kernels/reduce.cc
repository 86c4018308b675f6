#include "kernels/reduce.hpp"

#include <cstdint>
#include <type_traits>

#include "kernels/fp8.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace chorus::kernels {
namespace {

template <typename T, typename Op>
void reduceLoop(void* dst, const void* a, const void* b, size_t count) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  Op op;
  for (size_t i = 0; i < count; ++i) d[i] = op(x[i], y[i]);
}

// A narrow float format (16 or 8 bits, stored as `Bits`) with its conversions to and from float.
template <typename Bits, float (*ToFloat)(Bits), Bits (*FromFloat)(float)>
struct Narrow {
  using Storage = Bits;
  static float widen(Bits b) { return ToFloat(b); }
  static Bits narrow(float f) { return FromFloat(f); }
};
using Half = Narrow<uint16_t, halfToFloat, floatToHalf>;
using Bfloat16 = Narrow<uint16_t, bfloat16ToFloat, floatToBfloat16>;
using E4m3 = Narrow<uint8_t, e4m3ToFloat, floatToE4m3>;
using E5m2 = Narrow<uint8_t, e5m2ToFloat, floatToE5m2>;

// Narrow floats reduce in float and round back once per element.
template <typename Format, typename Op>
void reduceLoopNarrow(void* dst, const void* a, const void* b, size_t count) {
  using T = typename Format::Storage;
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  Op op;
  for (size_t i = 0; i < count; ++i) d[i] = Format::narrow(op(Format::widen(x[i]), Format::widen(y[i])));
}

#if defined(__x86_64__)
// binary16 through the F16C conversion instructions, 8 elements at a time; the conversion back rounds to
// nearest even like floatToHalf. Selected at run time when the processor has F16C.
template <typename Op>
__attribute__((target("avx,f16c"))) __m256 apply(__m256 a, __m256 b) {
  if constexpr (std::is_same_v<Op, Sum>) return _mm256_add_ps(a, b);
  if constexpr (std::is_same_v<Op, Prod>) return _mm256_mul_ps(a, b);
  if constexpr (std::is_same_v<Op, Max>) return _mm256_max_ps(b, a);  // a > b ? a : b, as the scalar functor
  return _mm256_min_ps(b, a);
}

template <typename Op>
__attribute__((target("avx,f16c"))) void reduceHalfF16c(void* dst, const void* a, const void* b, size_t count) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 fx = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    __m256 fy = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + i)));
    __m128i out = _mm256_cvtps_ph(apply<Op>(fx, fy), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), out);
  }
  Op op;
  for (; i < count; ++i) d[i] = floatToHalf(op(halfToFloat(x[i]), halfToFloat(y[i])));
}

bool hasF16c() {
#if defined(__clang__) && __clang_major__ < 16
  // Older clang cannot ask for f16c by name; every x86 CPU with AVX2 has it.
  static const bool has = __builtin_cpu_supports("avx2");
#else
  static const bool has = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
#endif
  return has;
}
#endif

template <typename Op>
ReduceFn halfReduction() {
#if defined(__x86_64__)
  if (hasF16c()) return reduceHalfF16c<Op>;
#endif
  return reduceLoopNarrow<Half, Op>;
}

template <typename Op>
ReduceFn forOp(DataType type) {
  switch (type) {
    case DataType::kInt8:
      return reduceLoop<int8_t, Op>;
    case DataType::kUint8:
      return reduceLoop<uint8_t, Op>;
    case DataType::kInt32:
      return reduceLoop<int32_t, Op>;
    case DataType::kUint32:
      return reduceLoop<uint32_t, Op>;
    case DataType::kInt64:
      return reduceLoop<int64_t, Op>;
    case DataType::kUint64:
      return reduceLoop<uint64_t, Op>;
    case DataType::kFloat32:
      return reduceLoop<float, Op>;
    case DataType::kFloat64:
      return reduceLoop<double, Op>;
    case DataType::kFloat16:
      return halfReduction<Op>();
    case DataType::kBfloat16:
      return reduceLoopNarrow<Bfloat16, Op>;
    case DataType::kFloat8e4m3:
      return reduceLoopNarrow<E4m3, Op>;
    case DataType::kFloat8e5m2:
      return reduceLoopNarrow<E5m2, Op>;
  }
  return nullptr;
}

template <typename T>
void scaleLoop(void* dst, const void* src, size_t count, double scalar) {
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  const T k = static_cast<T>(scalar);
  for (size_t i = 0; i < count; ++i) d[i] = static_cast<T>(s[i] * k);
}

template <typename Format>
void scaleLoopNarrow(void* dst, const void* src, size_t count, double scalar) {
  using T = typename Format::Storage;
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  const float k = Format::widen(Format::narrow(static_cast<float>(scalar)));  // the scalar in the element type
  for (size_t i = 0; i < count; ++i) d[i] = Format::narrow(Format::widen(s[i]) * k);
}

template <typename T>
void divideLoop(void* buf, size_t count, int divisor) {
  T* d = static_cast<T*>(buf);
  const T n = static_cast<T>(divisor);
  for (size_t i = 0; i < count; ++i) d[i] = static_cast<T>(d[i] / n);
}

template <typename Format>
void divideLoopNarrow(void* buf, size_t count, int divisor) {
  using T = typename Format::Storage;
  T* d = static_cast<T*>(buf);
  const float n = static_cast<float>(divisor);
  for (size_t i = 0; i < count; ++i) d[i] = Format::narrow(Format::widen(d[i]) / n);
}

}  // namespace

ReduceFn reduceFunction(DataType type, RedOpKind op) {
  switch (op) {
    case RedOpKind::kSum:
    case RedOpKind::kAvg:
    case RedOpKind::kPreMulSum:
      return forOp<Sum>(type);
    case RedOpKind::kProd:
      return forOp<Prod>(type);
    case RedOpKind::kMax:
      return forOp<Max>(type);
    case RedOpKind::kMin:
      return forOp<Min>(type);
  }
  return nullptr;
}

void scale(void* dst, const void* src, size_t count, DataType type, double scalar) {
  switch (type) {
    case DataType::kInt8:
      return scaleLoop<int8_t>(dst, src, count, scalar);
    case DataType::kUint8:
      return scaleLoop<uint8_t>(dst, src, count, scalar);
    case DataType::kInt32:
      return scaleLoop<int32_t>(dst, src, count, scalar);
    case DataType::kUint32:
      return scaleLoop<uint32_t>(dst, src, count, scalar);
    case DataType::kInt64:
      return scaleLoop<int64_t>(dst, src, count, scalar);
    case DataType::kUint64:
      return scaleLoop<uint64_t>(dst, src, count, scalar);
    case DataType::kFloat32:
      return scaleLoop<float>(dst, src, count, scalar);
    case DataType::kFloat64:
      return scaleLoop<double>(dst, src, count, scalar);
    case DataType::kFloat16:
      return scaleLoopNarrow<Half>(dst, src, count, scalar);
    case DataType::kBfloat16:
      return scaleLoopNarrow<Bfloat16>(dst, src, count, scalar);
    case DataType::kFloat8e4m3:
      return scaleLoopNarrow<E4m3>(dst, src, count, scalar);
    case DataType::kFloat8e5m2:
      return scaleLoopNarrow<E5m2>(dst, src, count, scalar);
  }
}

void divide(void* buf, size_t count, DataType type, int divisor) {
  switch (type) {
    case DataType::kInt8:
      return divideLoop<int8_t>(buf, count, divisor);
    case DataType::kUint8:
      return divideLoop<uint8_t>(buf, count, divisor);
    case DataType::kInt32:
      return divideLoop<int32_t>(buf, count, divisor);
    case DataType::kUint32:
      return divideLoop<uint32_t>(buf, count, divisor);
    case DataType::kInt64:
      return divideLoop<int64_t>(buf, count, divisor);
    case DataType::kUint64:
      return divideLoop<uint64_t>(buf, count, divisor);
    case DataType::kFloat32:
      return divideLoop<float>(buf, count, divisor);
    case DataType::kFloat64:
      return divideLoop<double>(buf, count, divisor);
    case DataType::kFloat16:
      return divideLoopNarrow<Half>(buf, count, divisor);
    case DataType::kBfloat16:
      return divideLoopNarrow<Bfloat16>(buf, count, divisor);
    case DataType::kFloat8e4m3:
      return divideLoopNarrow<E4m3>(buf, count, divisor);
    case DataType::kFloat8e5m2:
      return divideLoopNarrow<E5m2>(buf, count, divisor);
  }
}

}  // namespace chorus::kernels

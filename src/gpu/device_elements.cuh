// What the GPU path's kernels share: each element type's arithmetic, the host path's own conversions
// (kernels/half.hpp, kernels/fp8.hpp) compiled for the device, and copies spread over a grid's threads.
#pragma once

#include <cstdint>

#include "chorus/status.hpp"
#include "chorus/types.hpp"
#include "kernels/fp8.hpp"
#include "kernels/half.hpp"
#include "kernels/reduce.hpp"

namespace chorus::gpu {

// The arithmetic of one element type. Plain types compute in their own type, as the host loops do.
template <typename T>
struct Plain {
  using Storage = T;
  template <typename Op>
  __device__ static T combine(T a, T b) {
    return Op()(a, b);
  }
  __device__ static T divide(T a, int n) { return static_cast<T>(a / static_cast<T>(n)); }
  using Scalar = T;
  __device__ static Scalar scalar(double s) { return static_cast<T>(s); }
  __device__ static Scalar scalarAt(const void* p) { return *static_cast<const T*>(p); }
  __device__ static T scale(T x, Scalar k) { return static_cast<T>(x * k); }
};

// Narrow floats (16 and 8 bits, `Format`'s storage) compute in float and round back to their type after every
// operation.
template <typename Format>
struct NarrowFloat {
  using Storage = typename Format::Bits;
  using Bits = Storage;
  template <typename Op>
  __device__ static Bits combine(Bits a, Bits b) {
    return Format::narrow(Op()(Format::widen(a), Format::widen(b)));
  }
  __device__ static Bits divide(Bits a, int n) { return Format::narrow(Format::widen(a) / static_cast<float>(n)); }
  using Scalar = float;
  __device__ static float scalar(double s) { return Format::widen(Format::narrow(static_cast<float>(s))); }
  __device__ static float scalarAt(const void* p) { return Format::widen(*static_cast<const Bits*>(p)); }
  __device__ static Bits scale(Bits x, float k) { return Format::narrow(Format::widen(x) * k); }
};

#define CHORUS_NARROW_FORMAT(Name, BitsType, toFloat, fromFloat)             \
  struct Name##Format {                                                      \
    using Bits = BitsType;                                                   \
    __device__ static float widen(Bits b) { return kernels::toFloat(b); }    \
    __device__ static Bits narrow(float f) { return kernels::fromFloat(f); } \
  };                                                                         \
  using Name = NarrowFloat<Name##Format>;
CHORUS_NARROW_FORMAT(Half, uint16_t, halfToFloat, floatToHalf)
CHORUS_NARROW_FORMAT(Bfloat16, uint16_t, bfloat16ToFloat, floatToBfloat16)
CHORUS_NARROW_FORMAT(E4m3, uint8_t, e4m3ToFloat, floatToE4m3)
CHORUS_NARROW_FORMAT(E5m2, uint8_t, e5m2ToFloat, floatToE5m2)
#undef CHORUS_NARROW_FORMAT

// Calls f(Arith{}) with the arithmetic of `type`.
template <typename F>
Status withType(DataType type, F f) {
  switch (type) {
    case DataType::kInt8:
      return f(Plain<int8_t>{});
    case DataType::kUint8:
      return f(Plain<uint8_t>{});
    case DataType::kInt32:
      return f(Plain<int32_t>{});
    case DataType::kUint32:
      return f(Plain<uint32_t>{});
    case DataType::kInt64:
      return f(Plain<int64_t>{});
    case DataType::kUint64:
      return f(Plain<uint64_t>{});
    case DataType::kFloat32:
      return f(Plain<float>{});
    case DataType::kFloat64:
      return f(Plain<double>{});
    case DataType::kFloat16:
      return f(Half{});
    case DataType::kBfloat16:
      return f(Bfloat16{});
    case DataType::kFloat8e4m3:
      return f(E4m3{});
    case DataType::kFloat8e5m2:
      return f(E5m2{});
  }
  return invalidArgument("no device kernel for this data type");
}

// Calls f(Op{}) with the functor of `op`: sum for sum, avg (divided after) and PreMulSum (inputs scaled before).
template <typename F>
Status withOp(RedOpKind op, F f) {
  switch (op) {
    case RedOpKind::kProd:
      return f(kernels::Prod{});
    case RedOpKind::kMax:
      return f(kernels::Max{});
    case RedOpKind::kMin:
      return f(kernels::Min{});
    default:
      return f(kernels::Sum{});
  }
}

// Calls f(Arith{}, Op{}) for every data type and every functor a kernel may be instantiated with (loading them all).
template <typename F>
Status forEveryTypeAndOp(F f) {
  for (int t = 0; t <= static_cast<int>(DataType::kFloat8e5m2); ++t) {
    if (!isValidDataType(static_cast<DataType>(t))) continue;
    for (RedOpKind op : {RedOpKind::kSum, RedOpKind::kProd, RedOpKind::kMax, RedOpKind::kMin}) {
      CHORUS_TRY(withType(static_cast<DataType>(t),
                          [&](auto arith) { return withOp(op, [&](auto functor) { return f(arith, functor); }); }));
    }
  }
  return Status::ok();
}

__device__ inline size_t globalThread() { return blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; }
__device__ inline size_t threadCount() { return static_cast<size_t>(gridDim.x) * blockDim.x; }

// Copies `bytes` with thread `thread` of `threads` taking every threads-th piece: 16-byte loads and stores where both
// ends are 16-byte aligned.
__device__ inline void copyBytes(const void* from, void* to, size_t bytes, size_t thread, size_t threads) {
  const auto* f = static_cast<const unsigned char*>(from);
  auto* t = static_cast<unsigned char*>(to);
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(f) | reinterpret_cast<uintptr_t>(t)) & 15) == 0) {
    const size_t vectors = bytes / 16;
    const auto* fv = reinterpret_cast<const uint4*>(f);
    auto* tv = reinterpret_cast<uint4*>(t);
    for (size_t i = thread; i < vectors; i += threads) tv[i] = fv[i];
    done = vectors * 16;
  }
  for (size_t i = done + thread; i < bytes; i += threads) t[i] = f[i];
}

// A copy of `bytes` of A's elements, each multiplied on the way by `scalarOnDevice` (a value of the type, read here)
// when not null, else by `scalar` (PreMulSum's inputs).
template <typename A>
__device__ void scaleElements(const void* from, void* to, size_t bytes, double scalar, const void* scalarOnDevice,
                              size_t thread, size_t threads) {
  using T = typename A::Storage;
  const auto k = scalarOnDevice ? A::scalarAt(scalarOnDevice) : A::scalar(scalar);
  const T* f = static_cast<const T*>(from);
  T* t = static_cast<T*>(to);
  const size_t count = bytes / sizeof(T);
  for (size_t i = thread; i < count; i += threads) t[i] = A::scale(f[i], k);
}

// to[i] = from[0][i] (Op) from[1][i] ... (Op) from[n-1][i], in that order, for `count` elements, written to `to` and,
// when not null, `alsoTo`; divided by `divideBy` unless it is 0 (avg).
template <typename A, typename Op>
__device__ void reduceElements(const void* const* from, int n, void* to, void* alsoTo, size_t count, int divideBy,
                               size_t thread, size_t threads) {
  using T = typename A::Storage;
  T* t = static_cast<T*>(to);
  T* also = static_cast<T*>(alsoTo);
  for (size_t i = thread; i < count; i += threads) {
    T acc = static_cast<const T*>(from[0])[i];
    for (int k = 1; k < n; ++k) acc = A::template combine<Op>(acc, static_cast<const T*>(from[k])[i]);
    if (divideBy) acc = A::divide(acc, divideBy);
    t[i] = acc;
    if (also) also[i] = acc;
  }
}

}  // namespace chorus::gpu

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "gpu/device_kernels.hpp"
#include "gpu/runtime.hpp"
#include "kernels/fp8.hpp"
#include "kernels/half.hpp"
#include "kernels/reduce.hpp"

namespace chorus::gpu {
namespace {

constexpr int kBatch = 64;  // copies or sources per kernel: their addresses travel in the kernel's parameters
constexpr int kThreads = 256;

struct CopyBatch {
  DeviceCopy copies[kBatch];
};

struct ReduceArgs {
  const void* from[kBatch];
  void* to;
  void* alsoTo;
  size_t count;
  int n;
  int divideBy;  // 0: no division
};

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

__device__ inline size_t globalThread() { return blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; }
__device__ inline size_t threadCount() { return static_cast<size_t>(gridDim.x) * blockDim.x; }

// One copy per blockIdx.y; 16-byte loads and stores where both ends are 16-byte aligned.
__global__ void copyKernel(CopyBatch batch) {
  const DeviceCopy c = batch.copies[blockIdx.y];
  const auto* from = static_cast<const unsigned char*>(c.from);
  auto* to = static_cast<unsigned char*>(c.to);
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(from) | reinterpret_cast<uintptr_t>(to)) & 15) == 0) {
    const size_t vectors = c.bytes / 16;
    const auto* f = reinterpret_cast<const uint4*>(from);
    auto* t = reinterpret_cast<uint4*>(to);
    for (size_t i = globalThread(); i < vectors; i += threadCount()) t[i] = f[i];
    done = vectors * 16;
  }
  for (size_t i = done + globalThread(); i < c.bytes; i += threadCount()) to[i] = from[i];
}

template <typename A>
__global__ void scaledCopyKernel(CopyBatch batch, double scalar, const void* scalarOnDevice) {
  using T = typename A::Storage;
  const DeviceCopy c = batch.copies[blockIdx.y];
  const auto k = scalarOnDevice ? A::scalarAt(scalarOnDevice) : A::scalar(scalar);
  const T* from = static_cast<const T*>(c.from);
  T* to = static_cast<T*>(c.to);
  const size_t count = c.bytes / sizeof(T);
  for (size_t i = globalThread(); i < count; i += threadCount()) to[i] = A::scale(from[i], k);
}

template <typename A, typename Op>
__global__ void reduceKernel(ReduceArgs a) {
  using T = typename A::Storage;
  T* to = static_cast<T*>(a.to);
  T* alsoTo = static_cast<T*>(a.alsoTo);
  for (size_t i = globalThread(); i < a.count; i += threadCount()) {
    T acc = static_cast<const T*>(a.from[0])[i];
    for (int k = 1; k < a.n; ++k) acc = A::template combine<Op>(acc, static_cast<const T*>(a.from[k])[i]);
    if (a.divideBy) acc = A::divide(acc, a.divideBy);
    to[i] = acc;
    if (alsoTo) alsoTo[i] = acc;
  }
}

// Blocks for `work` units of 16 bytes' worth: enough to fill the device, at most 1024.
unsigned blocksFor(size_t bytes) {
  const size_t perBlock = kThreads * 16 * 4;
  return static_cast<unsigned>(std::clamp<size_t>((bytes + perBlock - 1) / perBlock, 1, 1024));
}

Status launched(const char* what) {
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? Status::ok() : cudaError(e, what);
}

// Runs launch(batch, blocks.x, rows) for each batch of at most kBatch copies.
template <typename Launch>
Status inBatches(const DeviceCopy* copies, int n, Launch launch) {
  for (int first = 0; first < n; first += kBatch) {
    const int rows = std::min(kBatch, n - first);
    CopyBatch batch{};
    size_t largest = 0;
    for (int i = 0; i < rows; ++i) {
      batch.copies[i] = copies[first + i];
      largest = std::max(largest, copies[first + i].bytes);
    }
    if (largest == 0) continue;
    CHORUS_TRY(launch(batch, dim3(blocksFor(largest), static_cast<unsigned>(rows))));
  }
  return Status::ok();
}

template <typename Kernel>
Status load(Kernel kernel) {
  cudaFuncAttributes attributes{};
  cudaError_t e = cudaFuncGetAttributes(&attributes, kernel);
  return e == cudaSuccess ? Status::ok() : cudaError(e, "loading the device kernels");
}

}  // namespace

Status loadKernels() {
  CHORUS_TRY(load(copyKernel));
  for (int t = 0; t <= static_cast<int>(DataType::kFloat8e5m2); ++t) {
    if (!isValidDataType(static_cast<DataType>(t))) continue;
    CHORUS_TRY(withType(static_cast<DataType>(t), [](auto arith) {
      using A = decltype(arith);
      CHORUS_TRY(load(scaledCopyKernel<A>));
      CHORUS_TRY(load(reduceKernel<A, kernels::Sum>));
      CHORUS_TRY(load(reduceKernel<A, kernels::Prod>));
      CHORUS_TRY(load(reduceKernel<A, kernels::Max>));
      return load(reduceKernel<A, kernels::Min>);
    }));
  }
  return Status::ok();
}

Status launchCopies(const DeviceCopy* copies, int n, void* stream) {
  return inBatches(copies, n, [&](const CopyBatch& batch, dim3 grid) {
    copyKernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(batch);
    return launched("the copy kernel's launch");
  });
}

Status launchScaledCopies(const DeviceCopy* copies, int n, DataType type, double scalar, const void* scalarOnDevice,
                          void* stream) {
  return withType(type, [&](auto arith) {
    using A = decltype(arith);
    return inBatches(copies, n, [&](const CopyBatch& batch, dim3 grid) {
      scaledCopyKernel<A><<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(batch, scalar, scalarOnDevice);
      return launched("the scaled copy kernel's launch");
    });
  });
}

Status launchReduce(const void* const* from, int n, void* to, void* alsoTo, size_t count, DataType type, RedOpKind op,
                    void* stream) {
  if (n < 1 || n > kBatch) return invalidArgument("a device reduction takes 1 to 64 sources");
  ReduceArgs a{};
  std::copy(from, from + n, a.from);
  a.to = to;
  a.alsoTo = alsoTo;
  a.count = count;
  a.n = n;
  a.divideBy = op == RedOpKind::kAvg ? n : 0;
  const size_t bytes = count * dataTypeSize(type);
  const dim3 grid(blocksFor(bytes));
  auto s = static_cast<cudaStream_t>(stream);
  return withType(type, [&](auto arith) {
    using A = decltype(arith);
    switch (op) {
      case RedOpKind::kProd:
        reduceKernel<A, kernels::Prod><<<grid, kThreads, 0, s>>>(a);
        break;
      case RedOpKind::kMax:
        reduceKernel<A, kernels::Max><<<grid, kThreads, 0, s>>>(a);
        break;
      case RedOpKind::kMin:
        reduceKernel<A, kernels::Min><<<grid, kThreads, 0, s>>>(a);
        break;
      default:  // sum, avg (divided above) and PreMulSum (its inputs were scaled on the way in)
        reduceKernel<A, kernels::Sum><<<grid, kThreads, 0, s>>>(a);
        break;
    }
    return launched("the reduction kernel's launch");
  });
}

}  // namespace chorus::gpu

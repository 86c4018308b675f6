#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "gpu/device_elements.cuh"
#include "gpu/device_kernels.hpp"
#include "gpu/one_kernel_step.hpp"
#include "gpu/runtime.hpp"

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

// One copy per blockIdx.y.
__global__ void copyKernel(CopyBatch batch) {
  const DeviceCopy c = batch.copies[blockIdx.y];
  copyBytes(c.from, c.to, c.bytes, globalThread(), threadCount());
}

template <typename A>
__global__ void scaledCopyKernel(CopyBatch batch, double scalar, const void* scalarOnDevice) {
  const DeviceCopy c = batch.copies[blockIdx.y];
  scaleElements<A>(c.from, c.to, c.bytes, scalar, scalarOnDevice, globalThread(), threadCount());
}

template <typename A, typename Op>
__global__ void reduceKernel(ReduceArgs a) {
  reduceElements<A, Op>(a.from, a.n, a.to, a.alsoTo, a.count, a.divideBy, globalThread(), threadCount());
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
  CHORUS_TRY(loadOneKernelSteps());
  CHORUS_TRY(forEveryTypeAndOp(
      [](auto arith, auto functor) { return load(reduceKernel<decltype(arith), decltype(functor)>); }));
  for (int t = 0; t <= static_cast<int>(DataType::kFloat8e5m2); ++t) {
    if (!isValidDataType(static_cast<DataType>(t))) continue;
    CHORUS_TRY(withType(static_cast<DataType>(t), [](auto arith) { return load(scaledCopyKernel<decltype(arith)>); }));
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
    return withOp(op, [&](auto functor) {
      reduceKernel<decltype(arith), decltype(functor)><<<grid, kThreads, 0, s>>>(a);
      return launched("the reduction kernel's launch");
    });
  });
}

}  // namespace chorus::gpu

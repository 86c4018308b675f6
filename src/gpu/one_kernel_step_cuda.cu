#include <cuda_runtime.h>

#include <algorithm>
#include <cuda/atomic>

#include "gpu/device_elements.cuh"
#include "gpu/one_kernel_step.hpp"
#include "gpu/runtime.hpp"

namespace chorus::gpu {
namespace {

constexpr int kThreads = 256;

using SystemWord = cuda::atomic_ref<uint32_t, cuda::thread_scope_system>;
using DeviceWord = cuda::atomic_ref<uint32_t, cuda::thread_scope_device>;

// Counters are compared cyclically, as the stream memory operations' waits compare them: they may wrap.
__device__ bool reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

template <typename A>
__device__ void runMoves(const KernelMove* moves, int n, double scalar, const void* scalarOnDevice) {
  for (int i = 0; i < n; ++i) {
    const KernelMove& m = moves[i];
    if (m.scaled) {
      scaleElements<A>(m.from, m.to, m.bytes, scalar, scalarOnDevice, globalThread(), threadCount());
    } else {
      copyBytes(m.from, m.to, m.bytes, globalThread(), threadCount());
    }
  }
}

// This block's arrival at the blocks' meeting; returns the counter's value before it. Every thread's writes before
// it are ordered before the arrival.
__device__ uint32_t arrive(uint32_t* counter) {
  __syncthreads();
  uint32_t before = 0;
  if (threadIdx.x == 0) before = DeviceWord(*counter).fetch_add(1, cuda::memory_order_acq_rel);
  return before;
}

template <typename A, typename Op>
__global__ void oneKernelStep(OneKernelStep s, double scalar, const void* scalarOnDevice) {
  runMoves<A>(s.before, s.beforeCount, scalar, scalarOnDevice);
  if (s.hasBarrier) {
    arrive(s.blocksMet);
    if (threadIdx.x == 0) {
      // Every block's first phase is done (it wrote this rank's slot) before any peer is told so.
      const uint32_t allHere = s.blocksMetBefore + gridDim.x;
      while (!reached(DeviceWord(*s.blocksMet).load(cuda::memory_order_acquire), allHere)) {
      }
      if (blockIdx.x == 0) {
        for (int p = 0; p < s.peers; ++p) SystemWord(*s.arriveAt[p]).store(s.barrier, cuda::memory_order_release);
      }
      for (int p = 0; p < s.peers; ++p) {
        SystemWord word(*const_cast<uint32_t*>(s.waitOn[p]));
        while (!reached(word.load(cuda::memory_order_acquire), s.barrier)) {
        }
      }
      cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_system);
    }
    __syncthreads();
  }
  runMoves<A>(s.after, s.afterCount, scalar, scalarOnDevice);
  if (s.sourceCount > 0) {
    reduceElements<A, Op>(s.sources, s.sourceCount, s.to, s.alsoTo, s.count, s.divideBy, globalThread(), threadCount());
  }
  if (s.peers == 0) return;
  // The last block to finish tells the peers this rank is done with their memory.
  const uint32_t before = arrive(s.blocksMet);
  const uint32_t meetings = s.hasBarrier ? 2 : 1;
  if (threadIdx.x == 0 && before == s.blocksMetBefore + meetings * gridDim.x - 1) {
    cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system);
    for (int p = 0; p < s.peers; ++p) SystemWord(*s.doneAt[p]).store(s.done, cuda::memory_order_release);
  }
}

}  // namespace

unsigned oneKernelBlocks(size_t bytes) {
  const size_t perBlock = kThreads * 16 * 4;
  return static_cast<unsigned>(std::clamp<size_t>((bytes + perBlock - 1) / perBlock, 1, kOneKernelBlocks));
}

Status launchOneKernelStep(const OneKernelStep& step, unsigned blocks, DataType type, RedOpKind op, double scalar,
                           const void* scalarOnDevice, void* stream) {
  return withType(type, [&](auto arith) {
    return withOp(op, [&](auto functor) {
      oneKernelStep<decltype(arith), decltype(functor)>
          <<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(step, scalar, scalarOnDevice);
      const cudaError_t e = cudaGetLastError();
      return e == cudaSuccess ? Status::ok() : cudaError(e, "the one-kernel step's launch");
    });
  });
}

Status loadOneKernelSteps() {
  return forEveryTypeAndOp([](auto arith, auto functor) {
    cudaFuncAttributes attributes{};
    const cudaError_t e = cudaFuncGetAttributes(&attributes, oneKernelStep<decltype(arith), decltype(functor)>);
    return e == cudaSuccess ? Status::ok() : cudaError(e, "loading the one-kernel steps");
  });
}

}  // namespace chorus::gpu

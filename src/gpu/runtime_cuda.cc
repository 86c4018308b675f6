#include <cuda_runtime.h>

#include <chrono>
#include <thread>

#include "core/deadline.hpp"
#include "core/settings.hpp"
#include "gpu/runtime.hpp"

namespace chorus::gpu {

bool available() {
  static const bool any = [] {
    int n = 0;
    const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    (void)cudaGetLastError();  // "no device" is an answer here, not an error for the next CUDA call to report
    return ok;
  }();
  return any;
}

MemoryType memoryTypeOf(const void* p) {
  if (!p || !available()) return MemoryType::kHost;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return MemoryType::kHost;
  }
  switch (a.type) {
    case cudaMemoryTypeDevice:
      return MemoryType::kDevice;
    case cudaMemoryTypeManaged:
      return MemoryType::kManaged;
    default:
      return MemoryType::kHost;  // pageable, or pinned host memory (cudaHostAlloc, cudaHostRegister)
  }
}

int currentDevice() {
  int device = -1;
  if (!available() || cudaGetDevice(&device) != cudaSuccess) return -1;
  return device;
}

int deviceCount() {
  int n = 0;
  return available() && cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

Status setDevice(int device) {
  cudaError_t e = cudaSetDevice(device);
  return e == cudaSuccess ? Status::ok() : cudaError(e, "cudaSetDevice(" + std::to_string(device) + ")");
}

Status allocateDevice(size_t bytes, void** out) {
  cudaError_t e = cudaMalloc(out, bytes);
  return e == cudaSuccess ? Status::ok() : cudaError(e, "cudaMalloc of " + std::to_string(bytes) + " bytes");
}

Status freeDevice(void* p) {
  cudaError_t e = cudaFree(p);
  return e == cudaSuccess ? Status::ok() : cudaError(e, "cudaFree");
}

Status copyMemory(void* dst, const void* src, size_t bytes) {
  cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  // From pageable memory cudaMemcpy returns once the source is staged; the copy is complete only when the legacy
  // stream it ran on is, and non-blocking streams do not wait for that stream.
  if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamLegacy);
  return e == cudaSuccess ? Status::ok() : cudaError(e, "cudaMemcpy");
}

Status createStream(void** out) {
  cudaStream_t s = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  *out = s;
  return e == cudaSuccess ? Status::ok() : cudaError(e, "cudaStreamCreate");
}

void destroyStream(void* stream) { (void)cudaStreamDestroy(static_cast<cudaStream_t>(stream)); }

Status synchronizeStream(void* stream) {
  cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  return e == cudaSuccess ? Status::ok() : cudaError(e, "cudaStreamSynchronize");
}

Status recordEvent(void* event, void* stream) {
  cudaError_t e = cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream));
  return e == cudaSuccess ? Status::ok() : cudaError(e, "cudaEventRecord");
}

// A spin first: the event has mostly been reached already, and each poll is a fraction of a microsecond.
Status waitForEvent(void* event, const std::atomic<bool>* aborted, const std::string& what) {
  CancelScope cancel(aborted);
  const Deadline deadline = Deadline::fromSettings();
  for (int polls = 0;; ++polls) {
    cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (e == cudaSuccess) return Status::ok();
    if (e != cudaErrorNotReady) return cudaError(e, "cudaEventQuery (the stream's work before " + what + " failed)");
    if (deadline.cancelled()) return remoteError("the communicator was aborted before its stream reached " + what);
    if (deadline.expired()) {
      return timeoutError("the stream did not reach " + what +
                          " within CHORUS_TIMEOUT=" + std::to_string(settings()[kTimeout]) + " s");
    }
    if (polls > 20000) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

Status cudaError(int code, const std::string& what) {
  const auto e = static_cast<cudaError_t>(code);
  return {ErrorCode::kCudaError, what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")"};
}

}  // namespace chorus::gpu

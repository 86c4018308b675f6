#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "gpu/pinned_pool.hpp"
#include "gpu/runtime.hpp"

namespace chorus::gpu {
namespace {

constexpr size_t kSmallest = 64 << 10;

struct Staging {
  std::shared_ptr<std::byte> buffer;
  size_t bytes = 0;
};

struct Pool {
  std::mutex mutex;
  std::map<size_t, std::vector<std::byte*>> free;                       // by size class
  std::map<std::tuple<int, void*, std::thread::id>, Staging> byStream;  // the staging buffer of each stream
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: buffers may come back while the process exits
  return *p;
}

size_t sizeClass(size_t bytes) {
  size_t c = kSmallest;
  while (c < bytes) c <<= 1;
  return c;
}

}  // namespace

Status takePinned(size_t bytes, std::shared_ptr<std::byte>* out) {
  const size_t size = sizeClass(bytes);
  std::byte* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool().mutex);
    auto& list = pool().free[size];
    if (!list.empty()) {
      p = list.back();
      list.pop_back();
    }
  }
  if (!p) {
    void* fresh = nullptr;
    cudaError_t e = cudaHostAlloc(&fresh, size, cudaHostAllocPortable);
    if (e != cudaSuccess) return cudaError(e, "cudaHostAlloc of " + std::to_string(size) + " bytes for staging");
    p = static_cast<std::byte*>(fresh);
  }
  *out = std::shared_ptr<std::byte>(p, [size](std::byte* b) {
    std::lock_guard<std::mutex> lock(pool().mutex);
    pool().free[size].push_back(b);
  });
  return Status::ok();
}

Status stagingFor(int device, void* stream, size_t bytes, std::shared_ptr<std::byte>* out) {
  // The legacy default stream is one per device; cudaStreamPerThread is one handle for a stream per thread.
  const auto key = std::make_tuple(
      device, stream,
      stream == static_cast<void*>(cudaStreamPerThread) ? std::this_thread::get_id() : std::thread::id());
  {
    std::lock_guard<std::mutex> lock(pool().mutex);
    const Staging& s = pool().byStream[key];
    if (s.buffer && s.bytes >= bytes) {
      *out = s.buffer;
      return Status::ok();
    }
  }
  std::shared_ptr<std::byte> fresh;
  CHORUS_TRY(takePinned(bytes, &fresh));
  std::shared_ptr<std::byte> replaced;  // given back after the lock: giving back takes it
  {
    std::lock_guard<std::mutex> lock(pool().mutex);
    Staging& s = pool().byStream[key];
    replaced = std::move(s.buffer);
    s = {fresh, sizeClass(bytes)};
  }
  *out = std::move(fresh);
  return Status::ok();
}

}  // namespace chorus::gpu

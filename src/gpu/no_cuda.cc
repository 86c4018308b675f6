// A build without the CUDA toolkit: every buffer is host memory, so nothing is ever enqueued on a stream.
#include "gpu/pinned_pool.hpp"
#include "gpu/runtime.hpp"
#include "gpu/stream_calls.hpp"

namespace chorus::gpu {

bool available() { return false; }
MemoryType memoryTypeOf(const void*) { return MemoryType::kHost; }
int currentDevice() { return -1; }
int deviceCount() { return 0; }
Status setDevice(int) { return invalidUsage("chorus was built without CUDA (CHORUS_CUDA=OFF)"); }
Status allocateDevice(size_t, void**) { return invalidUsage("chorus was built without CUDA (CHORUS_CUDA=OFF)"); }
Status freeDevice(void*) { return invalidUsage("chorus was built without CUDA (CHORUS_CUDA=OFF)"); }
Status copyMemory(void*, const void*, size_t) {
  return invalidUsage("chorus was built without CUDA (CHORUS_CUDA=OFF)");
}
Status createStream(void**) { return invalidUsage("chorus was built without CUDA (CHORUS_CUDA=OFF)"); }
void destroyStream(void*) {}
Status synchronizeStream(void*) { return Status::ok(); }
Status cudaError(int code, const std::string& what) {
  return {ErrorCode::kCudaError, what + ": CUDA error " + std::to_string(code)};
}
Status takePinned(size_t, std::shared_ptr<std::byte>*) {
  return invalidUsage("chorus was built without CUDA (CHORUS_CUDA=OFF)");
}
Status stagingFor(int, void*, size_t, std::shared_ptr<std::byte>*) {
  return invalidUsage("chorus was built without CUDA (CHORUS_CUDA=OFF)");
}
Status enqueueOnStream(CommImpl&, const std::vector<Operation>&) {
  return invalidUsage("device buffers: chorus was built without CUDA (CHORUS_CUDA=OFF)");
}

}  // namespace chorus::gpu

// A build without the CUDA toolkit (CHORUS_CUDA=OFF): every buffer is host memory, so nothing is ever enqueued on a
// stream.
#include "gpu/peer_group.hpp"
#include "gpu/pinned_pool.hpp"
#include "gpu/runtime.hpp"
#include "gpu/stream_calls.hpp"

namespace chorus::gpu {
namespace {
Status noCuda() { return invalidUsage("chorus was built without CUDA (CHORUS_CUDA=OFF)"); }
}  // namespace

bool available() { return false; }
MemoryType memoryTypeOf(const void*) { return MemoryType::kHost; }
int currentDevice() { return -1; }
int deviceCount() { return 0; }
Status setDevice(int) { return noCuda(); }
Status allocateDevice(size_t, void**) { return noCuda(); }
Status freeDevice(void*) { return noCuda(); }
Status copyMemory(void*, const void*, size_t) { return noCuda(); }
Status createStream(void**) { return noCuda(); }
void destroyStream(void*) {}
Status synchronizeStream(void*) { return Status::ok(); }
Status recordEvent(void*, void*) { return noCuda(); }
Status waitForEvent(void*, const std::atomic<bool>*, const std::string&) { return noCuda(); }
Status loadKernels() { return noCuda(); }
Status cudaError(int code, const std::string& what) {
  return {ErrorCode::kCudaError, what + ": CUDA error " + std::to_string(code)};
}
Status takePinned(size_t, std::shared_ptr<std::byte>*) { return noCuda(); }
Status stagingFor(int, void*, size_t, std::shared_ptr<std::byte>*) { return noCuda(); }
Status preparePeerMemory(HostComm&, const std::vector<Operation>&, bool* usable) {
  *usable = false;
  return Status::ok();
}
Status enqueueOnStream(HostComm&, const std::vector<Operation>&) { return noCuda().withContext("device buffers"); }
Status enqueueOnStreams(const std::vector<std::pair<HostComm*, std::vector<Operation>>>&) {
  return noCuda().withContext("device buffers");
}

}  // namespace chorus::gpu

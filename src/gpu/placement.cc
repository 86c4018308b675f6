#include "gpu/placement.hpp"

#include <string>

#include "algorithms/plan.hpp"
#include "chorus/stream.hpp"
#include "gpu/runtime.hpp"

namespace chorus::gpu {
namespace {
const char* describe(MemoryType t) {
  return t == MemoryType::kHost ? "host memory" : t == MemoryType::kDevice ? "device memory" : "managed memory";
}
}  // namespace

Status placeOperation(Operation* op, int rank, int nranks) {
  if (!available()) return Status::ok();
  const BufferExtents x = bufferExtents(*op, rank, nranks);
  // The buffers this rank uses decide; a call that uses none (an empty Send) goes by the pointers it was given.
  const bool useSend = x.sendBytes > 0 || (x.recvBytes == 0 && op->send);
  const bool useRecv = x.recvBytes > 0 || (x.sendBytes == 0 && op->recv);
  const MemoryType send = useSend ? memoryTypeOf(op->send) : MemoryType::kHost;
  const MemoryType recv = useRecv ? memoryTypeOf(op->recv) : MemoryType::kHost;
  if (useSend && useRecv && (send == MemoryType::kHost) != (recv == MemoryType::kHost)) {
    return invalidArgument(std::string(algo::collName(op->type)) + ": sendbuff is " + describe(send) +
                           " but recvbuff is " + describe(recv) +
                           "; a call's buffers must all be host memory or all "
                           "device memory");
  }
  op->onDevice = (useSend && send != MemoryType::kHost) || (useRecv && recv != MemoryType::kHost);
  op->stream = op->onDevice ? currentStream() : nullptr;
  if (op->op.scalarOnDevice && !op->onDevice) {
    return invalidArgument(std::string(algo::collName(op->type)) +
                           ": a PreMulSum scalar in device memory needs the call's buffers on the device too");
  }
  return Status::ok();
}

}  // namespace chorus::gpu

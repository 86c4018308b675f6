// One collective or point-to-point call as data, before it becomes a plan; and its argument checks.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "algorithms/plan.hpp"
#include "chorus/status.hpp"
#include "chorus/types.hpp"

namespace chorus {

namespace tuner {
class CallSelection;
}

struct Operation {
  algo::CollType type = algo::CollType::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DataType dtype = DataType::kFloat32;
  RedOp op;
  int root = 0;                                          // root, or the peer of send/recv
  std::shared_ptr<const algo::VariableLayout> variable;  // AlltoAllv only; shared so an Operation copies cheaply
  bool onDevice = false;       // device or managed buffers: runs on `stream` (gpu/stream_calls.hpp)
  void* stream = nullptr;      // the caller's cudaStream_t, for onDevice operations
  uint64_t scheduledTick = 0;  // observe::ticks() when an async call was queued (0: it runs as it is made)
  const tuner::CallSelection* selection = nullptr;  // the call's own choice of algorithms (interned), null: none
};

/// The bytes of the send and receive buffers one rank's call reads and writes (0 for a buffer it does not use),
/// from the buffers' starts.
struct BufferExtents {
  size_t sendBytes = 0;
  size_t recvBytes = 0;
  bool recvFullyWritten = true;  // false where the call leaves gaps in the receive extent (AlltoAllv)
};
BufferExtents bufferExtents(const Operation& op, int rank, int nranks);

/// Whether `bytes` from `base` end below the top of the address space (a buffer cannot wrap around it).
inline bool endsInAddressSpace(const void* base, uint64_t bytes) {
  uintptr_t end = 0;
  return !__builtin_add_overflow(reinterpret_cast<uintptr_t>(base), static_cast<uintptr_t>(bytes), &end);
}

/// Checks the arguments of `op` for a rank of a communicator of `nranks`; the message names the bad argument.
Status validate(const Operation& op, int rank, int nranks);

/// validate() for the calls of one thread on one communicator, remembering the last call that passed: a loop that
/// repeats a call (the same collective, count, type, op and root) checks its arguments once, as the checks depend on
/// nothing else but the buffers, and those only for being there and fitting below the top of the address space. A
/// loop on other buffers each time (a training step's fresh activations, a pool of buffers) checks just that.
/// AlltoAllv's counts are checked on every call.
class CallValidator {
 public:
  Status check(const Operation& op, int rank, int nranks);
  /// Whether `op` repeats the last call that passed, perhaps on other buffers that pass its checks, and that call was
  /// marked repeatable: it ran as a blocking call on host memory, so its checks, its placement and its path hold for
  /// `op` as they did for it.
  bool repeats(const Operation& op) const { return repeatable_ && sameAsPassed(op); }
  void markRepeatable() { repeatable_ = true; }

 private:
  bool sameAsPassed(const Operation& op) const {
    return passed_ && op.type == type_ && op.count == count_ && op.dtype == dtype_ && op.op.kind == kind_ &&
           op.root == root_ && ((op.send == send_ && op.recv == recv_) || buffersHold(op));
  }
  bool buffersHold(const Operation& op) const {
    return holds(op.send, extents_.sendBytes) && holds(op.recv, extents_.recvBytes);
  }
  // validate()'s checks of a buffer the call uses for `bytes` (0: none): not null, and not past the address space.
  static bool holds(const void* buffer, size_t bytes) {
    return bytes == 0 || (buffer && endsInAddressSpace(buffer, bytes));
  }
  bool passed_ = false;
  bool repeatable_ = false;
  algo::CollType type_ = algo::CollType::kAllReduce;
  const void* send_ = nullptr;  // the passed call's buffers: the same ones again need no check
  void* recv_ = nullptr;
  size_t count_ = 0;
  DataType dtype_ = DataType::kFloat32;
  RedOpKind kind_ = RedOpKind::kSum;
  int root_ = 0;
  BufferExtents extents_;  // of the passed call: what its buffers had to hold
};

/// The Sends to this rank itself and the Recvs from it among one call's (or group's) `ops` must pair up in order
/// with equal sizes: a lone one would leave data behind for a later call, or read what an earlier one left.
Status checkSelfExchanges(std::span<const Operation> ops, int rank);

/// Whether the buffers of `op` overlap as NCCL lays out an in-place call: the same buffer (AllReduce, Broadcast,
/// Reduce, AlltoAll), or this rank's block of the larger one (AllGather and Gather: send in recv; ReduceScatter and
/// Scatter: recv in send).
bool inPlace(const Operation& op, int rank, int nranks);

/// Elements this rank contributes to a reduction (what pre-multiplication scales), 0 for non-reductions.
size_t reductionInputCount(const Operation& op, int rank, int nranks);
/// Elements of the reduced result this rank holds (what avg divides), 0 when none.
size_t reductionOutputCount(const Operation& op, int rank, int nranks);

/// The call's payload in bytes as TrafficCounters count it (nccl-tests' algorithm-bandwidth size).
uint64_t payloadBytes(const Operation& op, int nranks);

}  // namespace chorus

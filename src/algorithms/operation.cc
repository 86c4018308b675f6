#include "algorithms/operation.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

namespace chorus {

using algo::CollType;

namespace {

bool isReduction(CollType t) {
  return t == CollType::kAllReduce || t == CollType::kReduceScatter || t == CollType::kReduce;
}

bool needsSendBuffer(const Operation& op, int rank) {
  switch (op.type) {
    case CollType::kRecv:
      return false;
    case CollType::kBroadcast:
    case CollType::kScatter:
      return rank == op.root;
    default:
      return true;
  }
}

bool needsRecvBuffer(const Operation& op, int rank) {
  switch (op.type) {
    case CollType::kSend:
      return false;
    case CollType::kReduce:
    case CollType::kGather:
      return rank == op.root;
    default:
      return true;
  }
}

// Buffers of more than PTRDIFF_MAX bytes cannot exist; a count beyond that (or whose byte size wraps around 64 bits,
// as SIZE_MAX / 4 + 2 floats does) is refused instead of running a wrapped-around operation or faulting.
constexpr uint64_t kMaxBufferBytes = static_cast<uint64_t>(PTRDIFF_MAX);

// Elements of `count` blocks of `blocks` each fit in a buffer that starts at `base` and does not wrap around.
bool fits(const void* base, size_t count, uint64_t blocks, size_t elemSize) {
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(count), blocks, &bytes) ||
      __builtin_mul_overflow(bytes, static_cast<uint64_t>(elemSize), &bytes) || bytes > kMaxBufferBytes) {
    return false;
  }
  return endsInAddressSpace(base, bytes);
}

// How many blocks of `count` elements the send and receive buffers hold (nccl.h's per-rank counts).
void blocksOf(CollType t, int nranks, uint64_t* sendBlocks, uint64_t* recvBlocks) {
  const uint64_t n = static_cast<uint64_t>(nranks);
  *sendBlocks = t == CollType::kReduceScatter || t == CollType::kScatter || t == CollType::kAlltoAll ? n : 1;
  *recvBlocks = t == CollType::kAllGather || t == CollType::kGather || t == CollType::kAlltoAll ? n : 1;
}

}  // namespace

Status validate(const Operation& op, int rank, int nranks) {
  if (static_cast<int>(op.type) > static_cast<int>(CollType::kRecv)) {
    return invalidArgument("unknown collective " + std::to_string(static_cast<int>(op.type)));
  }
  const char* name = algo::collName(op.type);
  if (!isValidDataType(op.dtype)) {
    return invalidArgument(std::string(name) + ": invalid datatype " + std::to_string(static_cast<int>(op.dtype)));
  }
  if (isReduction(op.type)) {
    int kind = static_cast<int>(op.op.kind);
    if (kind < 0 || kind > static_cast<int>(RedOpKind::kPreMulSum)) {
      return invalidArgument(std::string(name) + ": invalid reduction op " + std::to_string(kind));
    }
  }
  const bool rooted = op.type == CollType::kBroadcast || op.type == CollType::kReduce || op.type == CollType::kGather ||
                      op.type == CollType::kScatter;
  const bool p2p = op.type == CollType::kSend || op.type == CollType::kRecv;
  if ((rooted || p2p) && (op.root < 0 || op.root >= nranks)) {
    return invalidArgument(std::string(name) + ": " + (p2p ? "peer " : "root ") + std::to_string(op.root) +
                           " is not a rank of this communicator (size " + std::to_string(nranks) + ")");
  }
  if (op.type == CollType::kAlltoAllv) {
    const size_t n = static_cast<size_t>(nranks);
    const algo::VariableLayout* v = op.variable.get();
    if (!v || v->sendCounts.size() != n || v->sendDispls.size() != n || v->recvCounts.size() != n ||
        v->recvDispls.size() != n) {
      return invalidArgument("AlltoAllv: counts and displacements must have one entry per rank");
    }
    size_t sendTotal = 0, recvTotal = 0;
    const size_t e = dataTypeSize(op.dtype);
    for (size_t i = 0; i < n; ++i) {
      size_t sendEnd = 0, recvEnd = 0;
      if (__builtin_add_overflow(v->sendDispls[i], v->sendCounts[i], &sendEnd) ||
          __builtin_add_overflow(v->recvDispls[i], v->recvCounts[i], &recvEnd) || !fits(op.send, sendEnd, 1, e) ||
          !fits(op.recv, recvEnd, 1, e) || __builtin_add_overflow(sendTotal, v->sendCounts[i], &sendTotal) ||
          __builtin_add_overflow(recvTotal, v->recvCounts[i], &recvTotal)) {
        return invalidArgument("AlltoAllv: the count and displacement for rank " + std::to_string(i) +
                               " reach past any possible buffer");
      }
    }
    if ((sendTotal > 0 && !op.send) || (recvTotal > 0 && !op.recv)) {
      return invalidArgument("AlltoAllv: null buffer with non-zero counts");
    }
    return Status::ok();
  }
  uint64_t sendBlocks = 1, recvBlocks = 1;
  blocksOf(op.type, nranks, &sendBlocks, &recvBlocks);
  const size_t e = dataTypeSize(op.dtype);
  if ((needsSendBuffer(op, rank) && !fits(op.send, op.count, sendBlocks, e)) ||
      (needsRecvBuffer(op, rank) && !fits(op.recv, op.count, recvBlocks, e))) {
    return invalidArgument(std::string(name) + ": count " + std::to_string(op.count) + " of " + dataTypeName(op.dtype) +
                           " is larger than any buffer can be");
  }
  if (op.count > 0) {
    if (needsSendBuffer(op, rank) && !op.send) return invalidArgument(std::string(name) + ": sendbuff is null");
    if (needsRecvBuffer(op, rank) && !op.recv) return invalidArgument(std::string(name) + ": recvbuff is null");
  }
  return Status::ok();
}

Status CallValidator::check(const Operation& op, int rank, int nranks) {
  if (sameAsPassed(op)) return Status::ok();
  CHORUS_TRY(validate(op, rank, nranks));
  passed_ = op.type != CollType::kAlltoAllv;
  repeatable_ = false;
  type_ = op.type;
  send_ = op.send;
  recv_ = op.recv;
  count_ = op.count;
  dtype_ = op.dtype;
  kind_ = op.op.kind;
  root_ = op.root;
  if (passed_) extents_ = bufferExtents(op, rank, nranks);
  return Status::ok();
}

Status checkSelfExchanges(std::span<const Operation> ops, int rank) {
  std::vector<uint64_t> sent, received;  // bytes of each self Send and self Recv, in call order
  for (const Operation& op : ops) {
    if (op.root != rank) continue;
    if (op.type == CollType::kSend) sent.push_back(op.count * dataTypeSize(op.dtype));
    if (op.type == CollType::kRecv) received.push_back(op.count * dataTypeSize(op.dtype));
  }
  if (sent.size() != received.size()) {
    return invalidUsage("Send/Recv: " + std::to_string(sent.size()) + " Send(s) to this rank itself (rank " +
                        std::to_string(rank) + ") but " + std::to_string(received.size()) +
                        " Recv(s) from it; each needs its partner in the same group");
  }
  for (size_t i = 0; i < sent.size(); ++i) {
    if (sent[i] != received[i]) {
      return invalidUsage("Send/Recv to self: Send " + std::to_string(i + 1) + " has " + std::to_string(sent[i]) +
                          " bytes but its Recv has " + std::to_string(received[i]));
    }
  }
  return Status::ok();
}

bool inPlace(const Operation& op, int rank, int) {
  if (!op.send || !op.recv) return false;
  const auto* send = static_cast<const char*>(op.send);
  const auto* recv = static_cast<const char*>(op.recv);
  const size_t block = static_cast<size_t>(rank) * op.count * dataTypeSize(op.dtype);
  switch (op.type) {
    case CollType::kAllGather:
    case CollType::kGather:
      return send == recv + block;
    case CollType::kReduceScatter:
    case CollType::kScatter:
      return recv == send + block;
    default:
      return send == recv;
  }
}

size_t reductionInputCount(const Operation& op, int, int nranks) {
  switch (op.type) {
    case CollType::kAllReduce:
    case CollType::kReduce:
      return op.count;
    case CollType::kReduceScatter:
      return op.count * static_cast<size_t>(nranks);
    default:
      return 0;
  }
}

size_t reductionOutputCount(const Operation& op, int rank, int) {
  switch (op.type) {
    case CollType::kAllReduce:
    case CollType::kReduceScatter:
      return op.count;
    case CollType::kReduce:
      return rank == op.root ? op.count : 0;
    default:
      return 0;
  }
}

BufferExtents bufferExtents(const Operation& op, int rank, int nranks) {
  BufferExtents x;
  const size_t e = dataTypeSize(op.dtype);
  if (op.type == CollType::kAlltoAllv) {
    const algo::VariableLayout& v = *op.variable;
    for (size_t i = 0; i < v.sendCounts.size(); ++i) {
      if (v.sendCounts[i]) x.sendBytes = std::max(x.sendBytes, (v.sendDispls[i] + v.sendCounts[i]) * e);
      if (v.recvCounts[i]) x.recvBytes = std::max(x.recvBytes, (v.recvDispls[i] + v.recvCounts[i]) * e);
    }
    x.recvFullyWritten = false;
    return x;
  }
  uint64_t sendBlocks = 1, recvBlocks = 1;
  blocksOf(op.type, nranks, &sendBlocks, &recvBlocks);
  if (needsSendBuffer(op, rank)) x.sendBytes = op.count * sendBlocks * e;
  if (needsRecvBuffer(op, rank)) x.recvBytes = op.count * recvBlocks * e;
  return x;
}

uint64_t payloadBytes(const Operation& op, int nranks) {
  const uint64_t e = dataTypeSize(op.dtype), n = static_cast<uint64_t>(nranks);
  switch (op.type) {
    case CollType::kAllGather:
    case CollType::kGather:
    case CollType::kReduceScatter:
    case CollType::kScatter:
    case CollType::kAlltoAll:
      return op.count * n * e;
    case CollType::kAlltoAllv: {
      uint64_t elements = 0;
      for (size_t c : op.variable->sendCounts) elements += c;
      return elements * e;
    }
    default:
      return op.count * e;
  }
}

}  // namespace chorus

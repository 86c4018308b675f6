#include "comm/operation.hpp"

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

}  // namespace

Status validate(const Operation& op, int rank, int nranks) {
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
    for (size_t i = 0; i < n; ++i) {
      sendTotal += v->sendCounts[i];
      recvTotal += v->recvCounts[i];
    }
    if ((sendTotal > 0 && !op.send) || (recvTotal > 0 && !op.recv)) {
      return invalidArgument("AlltoAllv: null buffer with non-zero counts");
    }
    return Status::ok();
  }
  if (op.count > 0) {
    if (needsSendBuffer(op, rank) && !op.send) return invalidArgument(std::string(name) + ": sendbuff is null");
    if (needsRecvBuffer(op, rank) && !op.recv) return invalidArgument(std::string(name) + ": recvbuff is null");
  }
  return Status::ok();
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

/// @file coll_args.hpp
/// A collective or point-to-point call as data: what Communicator::run() and Communicator::submit() take. Each typed
/// method of Communicator (allReduce(), broadcast(), ...) is one of these with its arguments filled in, so a
/// framework that dispatches calls by kind (a backend, a language binding) makes one CollArgs and one call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chorus/types.hpp"

namespace chorus {

/// The kinds of call.
enum class Collective : uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kAlltoAll,
  kAlltoAllv,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
  kSend,
  kRecv,
};

/// One call's arguments. What each kind reads and writes is as its typed method on Communicator says.
struct CollArgs {
  /// An AllReduce of nothing; fill in the fields.
  CollArgs() = default;
  /// Every field but AlltoAllv's counts and displacements.
  CollArgs(Collective coll, const void* send, void* recv, size_t count, DataType type, RedOp op = {}, int root = 0)
      : coll(coll), send(send), recv(recv), count(count), type(type), op(op), root(root) {}
  /// AlltoAllv's arguments.
  static CollArgs alltoAllv(const void* send, const size_t* sendCounts, const size_t* sendDispls, void* recv,
                            const size_t* recvCounts, const size_t* recvDispls, DataType type) {
    CollArgs a(Collective::kAlltoAllv, send, recv, 0, type);
    a.sendCounts = sendCounts;
    a.sendDispls = sendDispls;
    a.recvCounts = recvCounts;
    a.recvDispls = recvDispls;
    return a;
  }

  Collective coll = Collective::kAllReduce;  ///< the kind of call
  const void* send = nullptr;                ///< the input (Send's buffer; unused by Recv)
  void* recv = nullptr;                      ///< the output (Recv's buffer; unused by Send)
  /// Elements per rank as the typed method takes them: AllReduce's count, ReduceScatter's recvCount, AllGather's
  /// sendCount, the block of AlltoAll, Gather and Scatter; unused by AlltoAllv.
  size_t count = 0;
  DataType type = DataType::kFloat32;  ///< the element type of both buffers
  RedOp op;                            ///< AllReduce, ReduceScatter and Reduce only
  int root = 0;  ///< Broadcast's, Reduce's, Gather's and Scatter's root; the peer of Send and Recv
  /// AlltoAllv only: element counts and displacements per rank, read before run() or submit() returns.
  const size_t* sendCounts = nullptr;
  const size_t* sendDispls = nullptr;  ///< AlltoAllv: where each rank's block starts in send
  const size_t* recvCounts = nullptr;  ///< AlltoAllv: elements from each rank
  const size_t* recvDispls = nullptr;  ///< AlltoAllv: where each rank's block starts in recv
  /// The algorithms this call may use, every rank the same; null or "": the selector's choice. NCCL's grammar of
  /// ncclCollConfig_t.algSelection: ',' or, '+' and, '^' not, each name a case-insensitive prefix of an algorithm's
  /// name, chorus's (chorus-info lists them) or NCCL's (RING_SIMPLE: the ring, TREE_SIMPLE: the log-depth one);
  /// docs/tuning.md has the details. It takes the place of CHORUS_ALGO and the tuning file for this call.
  const char* algorithms = nullptr;
  /// Whether a selection that leaves the call no algorithm is an error (kInvalidArgument) or lets the selector
  /// choose as without one.
  bool algorithmsRequired = true;
};

}  // namespace chorus

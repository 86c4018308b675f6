// Calls on device buffers, enqueued on a CUDA stream. Among ranks of one host the collectives run on the GPU, over
// the ranks' device memory (gpu/peer_group.hpp). The rest (Send/Recv, AlltoAllv, ranks on several hosts,
// CHORUS_GPU_PEER_MEMORY=0) are staged: the communicator's thread runs the operations, in call order with its other
// queued work, once the stream has reached them:
//
//   caller's stream:  copy inputs to pinned staging -> event -> [host function: wait for the call] -> copy results
//   communicator's thread:                 wait for the event -> run the operations on the staging buffer
//
// So the call returns at once, and the stream's later work sees its results, as with NCCL. The operations run on
// the host path (the same plans, transports and checks), through pinned host memory.
#pragma once

#include <utility>
#include <vector>

#include "algorithms/operation.hpp"
#include "chorus/status.hpp"
#include "gpu/host_comm.hpp"

namespace chorus::gpu {

/// Enqueues `ops` (validated, all on device memory; one call, or one communicator's operations of a group) of `comm`
/// on their streams. Operations of a group on different streams run together, as in NCCL: the first operation's
/// stream waits for the others before the call, and they wait for it after. An error here (a CUDA call that failed)
/// is returned; a failure of the operations themselves is the communicator's async error.
Status enqueueOnStream(HostComm& comm, const std::vector<Operation>& ops);

/// enqueueOnStream for several communicators' operations of one group, made by one thread: those that run on the
/// GPU have their steps interleaved (gpu/peer_group.hpp).
Status enqueueOnStreams(const std::vector<std::pair<HostComm*, std::vector<Operation>>>& calls);

}  // namespace chorus::gpu

// Calls on device buffers among the ranks of one host, run on the GPU: each rank's device memory holds two slots
// that every other rank maps (CUDA IPC: cudaIpcGetMemHandle / cudaIpcOpenMemHandle, on one GPU or across GPUs with
// peer access), and a call runs the steps of gpu/peer_steps.hpp on the caller's stream: copy kernels, reduction
// kernels, and barriers that are stream memory operations on flags in the ranks' memory (each rank writes its
// arrival into every peer's flags and its stream waits on its own; no host thread takes part). The host enqueues
// the whole call and returns.
//
// The first call that can run this way sets the group up, collectively, through the host path: the ranks exchange
// their memory handles and agree whether every rank mapped every peer. Where they cannot (ranks on several hosts,
// GPUs without peer access, CHORUS_GPU_PEER_MEMORY=0), every call is staged through host memory instead
// (gpu/stream_calls.hpp).
//
// Every wait has a deadline: a watchdog thread follows the calls in flight, and when one has not completed within
// CHORUS_TIMEOUT of the stream reaching it (a dead or stopped peer, a peer in another call), or the communicator was
// aborted, it records the failure as the communicator's async error and releases the stream's waits.
#pragma once

#include <vector>

#include "chorus/status.hpp"
#include "comm/operation.hpp"

namespace chorus {
class CommImpl;
}

namespace chorus::gpu {

/// Runs `ops` (validated, on device memory; one call, or one communicator's collectives of a group, run one after
/// the other) of `comm` on `stream` over the ranks' device memory. `*ran` is false, and nothing was enqueued, when
/// this communicator's calls are staged through host memory instead; the outcome is the same on every rank.
Status runOnPeerMemory(CommImpl& comm, const std::vector<Operation>& ops, void* stream, bool* ran);

}  // namespace chorus::gpu

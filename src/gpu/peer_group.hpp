// Calls on device buffers among the ranks of one host, run on the GPU: each rank's device memory holds two slots
// that every other rank maps (CUDA IPC: cudaIpcGetMemHandle / cudaIpcOpenMemHandle, on one GPU or across GPUs with
// peer access), and a call runs the plan the catalogue gives it (algorithms/peer_plan.hpp) on the caller's stream: copy
// kernels, reduction kernels, and barriers that are stream memory operations on flags in the ranks' memory (each rank
// writes its arrival into every peer's flags and its stream waits on its own; no host thread takes part). The host
// enqueues the whole call and returns.
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

#include "algorithms/operation.hpp"
#include "chorus/status.hpp"
#include "gpu/host_comm.hpp"

namespace chorus::gpu {

/// Sets this communicator's group up, collectively, if it is not yet and `ops` (a call or a group's collectives) would
/// run on it; `*usable` says whether they will. A thread driving several communicators (a group over several
/// devices) sets them up together, from one thread each (comm/group.cc): each set-up waits for its peers'.
Status preparePeerMemory(HostComm& comm, const std::vector<Operation>& ops, bool* usable);

/// One communicator's part of a call: its operations (validated, on device memory; one call, or its collectives of
/// a group, run one after the other) on `stream`.
struct CommCalls {
  HostComm* comm = nullptr;
  std::vector<Operation> ops;
  void* stream = nullptr;
};

/// Runs each entry over the ranks' device memory where its communicator can, `(*ran)[i]` false where it cannot and
/// nothing was enqueued for it (the caller stages it through host memory; the outcome is the same on every rank).
/// Several communicators driven by one thread (a group over several devices) have their steps interleaved, one of
/// each in turn: a communicator's stream then waits at a barrier only for work already enqueued on the others', so a
/// full stream never holds back the thread that has yet to enqueue what releases it.
Status runOnPeerMemory(const std::vector<CommCalls>& calls, std::vector<bool>* ran);

}  // namespace chorus::gpu

// Thread-local groups, as NCCL's ncclGroupStart/End: work queued while a group is open runs at the outermost end.
#pragma once

#include <functional>

#include "comm/comm_impl.hpp"

namespace chorus::group {

bool active();
/// Queues a communicator init (run concurrently with the other queued inits at groupEnd).
void deferInit(std::function<Status()> init);
/// Queues an operation of `comm`.
void deferOperation(CommImpl* comm, Operation op);

}  // namespace chorus::group

// The perf driver's backend for chorus itself, through the NCCL C API of nccl.h.
#pragma once

#include <memory>

#include "nccl.h"
#include "perf/backend.hpp"

namespace chorus::perf {

/// Creates the communicators of this thread's `perThread` ranks (inside one group, as nccl-tests does) and
/// ends the process with a message when that fails. With `deviceMemory`, rank r works on CUDA device
/// r % (devices), on a stream of its own.
std::unique_ptr<Backend> makeNcclBackend(const ncclUniqueId& id, int nranks, int firstRank, int perThread,
                                         bool deviceMemory);

/// Ends the process the way nccl-tests does on an NCCL error (exit code 3, 4 for a timeout).
[[noreturn]] void ncclFailure(ncclResult_t result, int line);
#define CHORUS_NCCL_CHECK(cmd)                                        \
  do {                                                                \
    ncclResult_t r_ = (cmd);                                          \
    if (r_ != ncclSuccess) ::chorus::perf::ncclFailure(r_, __LINE__); \
  } while (0)

}  // namespace chorus::perf

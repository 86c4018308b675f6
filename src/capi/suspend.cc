// ncclCommSuspend / ncclCommResume and ncclCommMemStats (NCCL 2.29): a suspended communicator releases its large
// buffers (the scratch area and cached plans; its FIFOs stay, the connections live on) and refuses calls until it
// resumes; the statistics are the bytes of chorus's own buffers of the communicator, host memory here.
#include "capi/api_support.hpp"
#include "capi/nccl_comm.hpp"
#include "comm/comm_access.hpp"

using chorus::capi::report;

extern "C" {

ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags) try {
  CHORUS_ENTER_MANAGEMENT(comm, "ncclCommSuspend");
  if ((flags & ~NCCL_SUSPEND_MEM) != 0)
    return report(chorus::invalidArgument("ncclCommSuspend: invalid flags " + std::to_string(flags)));
  if (comm->suspended.load(std::memory_order_acquire))
    return report(chorus::invalidUsage("ncclCommSuspend: comm is suspended already"));
  chorus::CommImpl& impl = chorus::CommAccess::impl(*comm->comm);
  if (flags & NCCL_SUSPEND_MEM) {
    comm->suspendedBytes = impl.memoryUse().releasable;
    impl.releaseBuffers();  // waits for the calls in flight first
  } else {
    impl.waitForAsyncWork();
  }
  comm->suspended.store(true, std::memory_order_release);
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommSuspend")

ncclResult_t pncclCommResume(ncclComm_t comm) try {
  CHORUS_ENTER_MANAGEMENT(comm, "ncclCommResume");
  if (!comm->suspended.load(std::memory_order_acquire))
    return report(chorus::invalidUsage("ncclCommResume: comm is not suspended"));
  comm->suspendedBytes = 0;  // the calls make their buffers again as they need them
  comm->suspended.store(false, std::memory_order_release);
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommResume")

ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) try {
  CHORUS_ENTER_MANAGEMENT(comm, "ncclCommMemStats");
  if (!value) return report(chorus::invalidArgument("ncclCommMemStats: value is NULL"));
  const chorus::CommImpl::MemoryUse use = chorus::CommAccess::impl(*comm->comm).memoryUse();
  switch (stat) {
    case ncclStatGpuMemSuspend:
      *value = use.releasable;
      return ncclSuccess;
    case ncclStatGpuMemSuspended:
      *value = comm->suspendedBytes;
      return ncclSuccess;
    case ncclStatGpuMemPersist:
      *value = use.persistent;
      return ncclSuccess;
    case ncclStatGpuMemTotal:
      *value = use.releasable + use.persistent;
      return ncclSuccess;
  }
  return report(chorus::invalidArgument("ncclCommMemStats: invalid stat " + std::to_string(static_cast<int>(stat))));
}
CHORUS_CATCH("ncclCommMemStats")

CHORUS_NCCL_ALIAS(ncclCommSuspend)
CHORUS_NCCL_ALIAS(ncclCommResume)
CHORUS_NCCL_ALIAS(ncclCommMemStats)

}  // extern "C"

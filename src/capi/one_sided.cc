// NCCL 2.29's host one-sided operations on windows (ncclPutSignal, ncclSignal, ncclWaitSignal). chorus has no
// one-sided path yet: each call checks its communicator and says so, an error a program can test for, never a
// silent success that would leave its peer waiting.
#include "capi/api_support.hpp"
#include "core/log.hpp"

using chorus::capi::report;

namespace {
ncclResult_t notInChorus(const char* fn) {
  CHORUS_WARN(kColl, "%s: one-sided operations are not implemented by chorus yet (docs/nccl.md)", fn);
  return report(chorus::invalidUsage(std::string(fn) + ": one-sided operations are not implemented by chorus yet"));
}
}  // namespace

extern "C" {

ncclResult_t pncclPutSignal(const void*, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int, int, unsigned int,
                            ncclComm_t comm, cudaStream_t) try {
  CHORUS_ENTER_OWNER(comm, "ncclPutSignal");
  return notInChorus("ncclPutSignal");
}
CHORUS_CATCH("ncclPutSignal")

ncclResult_t pncclSignal(int, int, int, unsigned int, ncclComm_t comm, cudaStream_t) try {
  CHORUS_ENTER_OWNER(comm, "ncclSignal");
  return notInChorus("ncclSignal");
}
CHORUS_CATCH("ncclSignal")

ncclResult_t pncclWaitSignal(int, ncclWaitSignalDesc_t*, ncclComm_t comm, cudaStream_t) try {
  CHORUS_ENTER_OWNER(comm, "ncclWaitSignal");
  return notInChorus("ncclWaitSignal");
}
CHORUS_CATCH("ncclWaitSignal")

CHORUS_NCCL_ALIAS(ncclPutSignal)
CHORUS_NCCL_ALIAS(ncclSignal)
CHORUS_NCCL_ALIAS(ncclWaitSignal)

}  // extern "C"

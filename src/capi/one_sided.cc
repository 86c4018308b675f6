// NCCL 2.29's host one-sided operations on windows (ncclPutSignal, ncclSignal, ncclWaitSignal), over the
// communicator's one-sided channel (comm/one_sided.hpp), which ncclConfig_t.numRmaCtx >= 1 asks for at init.
// peerWinOffset counts bytes; a put returns once its bytes are the transport's, so localbuff may be reused.
#include <string>

#include "capi/api_support.hpp"
#include "capi/nccl_comm.hpp"
#include "comm/comm_access.hpp"
#include "core/log.hpp"
#include "gpu/runtime.hpp"

using chorus::Status;
using chorus::capi::report;

namespace {

// The communicator's one-sided channel, or why it has none.
Status channelOf(ncclComm_t comm, const char* fn, chorus::OneSided** out) {
  *out = chorus::CommAccess::impl(*comm->comm).oneSided();
  if (*out) return Status::ok();
  return chorus::invalidUsage(std::string(fn) +
                              ": the communicator has no one-sided channel: create it with ncclConfig_t.numRmaCtx "
                              ">= 1 (ncclCommInitRankConfig)");
}

Status checkSignal(const chorus::OneSided& channel, ncclComm_t comm, int peer, int sigIdx, int ctx, const char* fn) {
  const int nranks = comm->comm->size();
  const std::string at = std::string(fn) + ": ";
  if (peer < 0 || peer >= nranks) {
    return chorus::invalidArgument(at + "peer " + std::to_string(peer) + " is not a rank of " + std::to_string(nranks));
  }
  if (sigIdx < 0) return chorus::invalidArgument(at + "sigIdx " + std::to_string(sigIdx) + " is negative");
  if (ctx < 0 || ctx >= channel.contexts()) {
    return chorus::invalidArgument(at + "ctx " + std::to_string(ctx) + " is not below numRmaCtx " +
                                   std::to_string(channel.contexts()));
  }
  return Status::ok();
}

}  // namespace

extern "C" {

ncclResult_t pncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                            ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
                            ncclComm_t comm, cudaStream_t) try {
  CHORUS_ENTER_OWNER(comm, "ncclPutSignal");
  chorus::OneSided* channel = nullptr;
  CHORUS_CHECK(channelOf(comm, "ncclPutSignal", &channel));
  CHORUS_CHECK(checkSignal(*channel, comm, peer, sigIdx, ctx, "ncclPutSignal"));
  CHORUS_CHECK(chorus::capi::checkType(datatype, "ncclPutSignal"));
  if (flags != 0) return report(chorus::invalidArgument("ncclPutSignal: flags must be 0 (reserved)"));
  const size_t bytes = count * chorus::dataTypeSize(chorus::capi::dt(datatype));
  if (bytes > 0 && !localbuff) return report(chorus::invalidArgument("ncclPutSignal: localbuff is NULL"));
  if (bytes > 0 && chorus::gpu::memoryTypeOf(localbuff) != chorus::gpu::MemoryType::kHost) {
    CHORUS_WARN(kColl, "ncclPutSignal: one-sided operations run on host memory only; localbuff is device memory");
    return report(
        chorus::invalidUsage("ncclPutSignal: localbuff is device memory; chorus's one-sided operations "
                             "run on host memory"));
  }
  uint64_t window = 0;
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    bool found = false;
    for (const auto& w : comm->windows) {
      if (w.get() == peerWin) {
        window = w->id;
        found = true;
      }
    }
    if (!found) return report(chorus::invalidArgument("ncclPutSignal: peerWin was not registered on this comm"));
  }
  CHORUS_CHECK(channel->put(peer, window, peerWinOffset, localbuff, bytes, sigIdx, ctx));
  return ncclSuccess;
}
CHORUS_CATCH("ncclPutSignal")

ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t) try {
  CHORUS_ENTER_OWNER(comm, "ncclSignal");
  chorus::OneSided* channel = nullptr;
  CHORUS_CHECK(channelOf(comm, "ncclSignal", &channel));
  CHORUS_CHECK(checkSignal(*channel, comm, peer, sigIdx, ctx, "ncclSignal"));
  if (flags != 0) return report(chorus::invalidArgument("ncclSignal: flags must be 0 (reserved)"));
  CHORUS_CHECK(channel->put(peer, chorus::OneSided::kNoWindow, 0, nullptr, 0, sigIdx, ctx));
  return ncclSuccess;
}
CHORUS_CATCH("ncclSignal")

ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t) try {
  CHORUS_ENTER_OWNER(comm, "ncclWaitSignal");
  chorus::OneSided* channel = nullptr;
  CHORUS_CHECK(channelOf(comm, "ncclWaitSignal", &channel));
  if (nDesc < 0 || (nDesc > 0 && !signalDescs)) {
    return report(chorus::invalidArgument("ncclWaitSignal: nDesc is negative or signalDescs is NULL"));
  }
  std::vector<chorus::SignalWait> waits;
  for (int i = 0; i < nDesc; ++i) {
    const ncclWaitSignalDesc_t& d = signalDescs[i];
    CHORUS_CHECK(checkSignal(*channel, comm, d.peer, d.sigIdx, d.ctx, "ncclWaitSignal"));
    if (d.opCnt < 0) return report(chorus::invalidArgument("ncclWaitSignal: opCnt is negative"));
    waits.push_back({d.opCnt, d.peer, d.sigIdx, d.ctx});
  }
  CHORUS_CHECK(channel->wait(waits));
  return ncclSuccess;
}
CHORUS_CATCH("ncclWaitSignal")

CHORUS_NCCL_ALIAS(ncclPutSignal)
CHORUS_NCCL_ALIAS(ncclSignal)
CHORUS_NCCL_ALIAS(ncclWaitSignal)

}  // extern "C"

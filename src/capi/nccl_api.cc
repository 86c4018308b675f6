// The NCCL C API on top of the chorus C++ API. Each function is defined as pnccl<Name> and exported a second
// time as a weak nccl<Name> alias, so profiling tools can interpose on nccl<Name> as NCCL allows.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "bootstrap/id_layout.hpp"
#include "bootstrap/settings.hpp"
#include "capi/api_support.hpp"
#include "capi/nccl_comm.hpp"
#include "chorus/stream.hpp"
#include "chorus/version.hpp"
#include "comm/comm_access.hpp"
#include "core/deadline.hpp"
#include "core/log.hpp"
#include "core/shareable_memory.hpp"
#include "gpu/runtime.hpp"
#include "kernels/element_value.hpp"

using chorus::DataType;
using chorus::RedOp;
using chorus::Status;

using chorus::capi::blockingConfig;
using chorus::capi::checkShell;
using chorus::capi::checkType;
using chorus::capi::dt;
using chorus::capi::initRank;
using chorus::capi::readConfig;
using chorus::capi::report;
using chorus::capi::resolveOp;
using chorus::capi::resultOf;

namespace {

// Shells of ended communicators, kept for the life of the process (nccl_comm.hpp) and reachable from here.
void retire(ncclComm_t comm) {
  static std::mutex mutex;
  static std::vector<ncclComm_t>* retired = new std::vector<ncclComm_t>();  // never destroyed: exit order is free
  std::lock_guard<std::mutex> lock(mutex);
  retired->push_back(comm);
}

// Ends a communicator (destroy, or abort), keeping its shell (nccl_comm.hpp).
ncclResult_t release(ncclComm_t comm, bool abort, const char* fn) {
  if (!comm) return ncclSuccess;
  if (ncclResult_t r = report(checkShell(comm, fn)); r != ncclSuccess) return r;
  unsigned alive = ncclComm::kAlive;
  if (!comm->magic.compare_exchange_strong(alive, ncclComm::kDead)) {
    return report(chorus::invalidArgument(std::string(fn) + ": comm was already destroyed or aborted"));
  }
  retire(comm);
  comm->gate.close();
  if (abort && comm->comm) comm->comm->abort();  // returns once the calls inside the communicator have left it
  if (!comm->gate.waitUntilEmpty(chorus::settings()[chorus::kTimeout])) {
    // Never free what a thread still uses: the communicator is left behind instead.
    (void)comm->comm.release();
    return report(chorus::internalError(std::string(fn) + ": a call on another thread did not leave the communicator"));
  }
  comm->comm.reset();
  std::lock_guard<std::mutex> lock(comm->mutex);
  comm->preMulOps.clear();
  comm->windows.clear();
  return ncclSuccess;
}

// The shell of a communicator made from `parent` (split, shrink): its CUDA device, and its blocking mode from
// `config` when one was given (read into `cfg`), else the parent's.
ncclComm_t childShell(ncclComm_t parent, std::unique_ptr<chorus::Communicator> child, const ncclConfig_t* config,
                      const ncclConfig_t& cfg) {
  auto* shell = new ncclComm();
  shell->comm = std::move(child);
  shell->cudaDevice = parent->cudaDevice;
  shell->blocking = config ? cfg.blocking != 0 : parent->blocking;
  return shell;
}

// Ends the operations in flight on this rank and closes its connections, so the peers' waits end at once too;
// later communication calls are refused, destroy and shrink still work.
void revoke(ncclComm_t comm) {
  comm->comm->abort();
  comm->revoked.store(true, std::memory_order_release);
}

}  // namespace

extern "C" {

ncclResult_t pncclMemAlloc(void** ptr, size_t size) try {
  if (!ptr) return report(chorus::invalidArgument("ncclMemAlloc: ptr is NULL"));
  if (size > static_cast<size_t>(PTRDIFF_MAX)) return report(chorus::systemError("ncclMemAlloc: out of memory"));
  // As NCCL's: device memory where there is a GPU. Host memory otherwise, shareable, so that peers on this host
  // read large transfers from it in place (core/shareable_memory.hpp); plain pages where memfd is refused.
  if (chorus::gpu::available()) return report(chorus::gpu::allocateDevice(size, ptr).withContext("ncclMemAlloc"));
  const chorus::Status shareable = chorus::allocateShareable(size, ptr);
  if (shareable.isOk()) return ncclSuccess;
  CHORUS_INFO(kInit, "ncclMemAlloc: %s; plain host memory instead", shareable.message().c_str());
  *ptr = aligned_alloc(4096, (size + 4095) & ~static_cast<size_t>(4095));
  if (!*ptr && size > 0) return report(chorus::systemError("ncclMemAlloc: out of memory"));
  return ncclSuccess;
}
CHORUS_CATCH("ncclMemAlloc")

ncclResult_t pncclMemFree(void* ptr) try {
  if (chorus::gpu::memoryTypeOf(ptr) != chorus::gpu::MemoryType::kHost) {
    return report(chorus::gpu::freeDevice(ptr).withContext("ncclMemFree"));
  }
  if (!chorus::freeShareable(ptr)) free(ptr);
  return ncclSuccess;
}
CHORUS_CATCH("ncclMemFree")

ncclResult_t pncclGetVersion(int* version) try {
  if (!version) return report(chorus::invalidArgument("ncclGetVersion: version is NULL"));
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
CHORUS_CATCH("ncclGetVersion")

const char* chorusGetVersion(void) { return chorus::version(); }

ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) try {
  if (!uniqueId) return report(chorus::invalidArgument("ncclGetUniqueId: uniqueId is NULL"));
  chorus::UniqueId id;
  const std::string& fixed = chorus::settings()[chorus::bootstrap::kCommId];
  Status st = fixed.empty() ? chorus::UniqueId::create(&id) : chorus::UniqueId::fromAddress(fixed, &id);
  if (!st.isOk()) return report(st.withContext("ncclGetUniqueId"));
  memcpy(uniqueId->internal, id.bytes.data(), sizeof(uniqueId->internal));
  return ncclSuccess;
}
CHORUS_CATCH("ncclGetUniqueId")

ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config) try {
  return initRank(comm, nranks, commId, rank, config);
}
CHORUS_CATCH("ncclCommInitRankConfig")

ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) try {
  return initRank(comm, nranks, commId, rank, nullptr);
}
CHORUS_CATCH("ncclCommInitRank")

ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                       ncclConfig_t* config) try {
  // One root serves every rank here: the first id is the one all ranks share.
  if (nId < 1 || !commIds) return report(chorus::invalidArgument("ncclCommInitRankScalable: no ids"));
  return initRank(newcomm, nranks, commIds[0], myrank, config);
}
CHORUS_CATCH("ncclCommInitRankScalable")

ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) try {
  if (!comms) return report(chorus::invalidArgument("ncclCommInitAll: comms is NULL"));
  if (ndev < 1) return report(chorus::invalidArgument("ncclCommInitAll: ndev " + std::to_string(ndev) + " < 1"));
  std::vector<std::unique_ptr<chorus::Communicator>> local;
  Status st = chorus::Communicator::createLocal(ndev, &local);
  if (!st.isOk()) return report(st.withContext("ncclCommInitAll"));
  for (int i = 0; i < ndev; ++i) {
    comms[i] = new ncclComm();
    comms[i]->comm = std::move(local[i]);
    comms[i]->cudaDevice = devlist ? devlist[i] : chorus::gpu::available() ? i : -1;
  }
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommInitAll")

ncclResult_t pncclCommFinalize(ncclComm_t comm) try {
  CHORUS_ENTER_OWNER(comm, "ncclCommFinalize");
  if (comm->finalized) return report(chorus::invalidArgument("ncclCommFinalize: comm is already finalized"));
  comm->finalized = true;
  // A nonblocking communicator finishes its queued work on its own thread; ncclCommGetAsyncError tells when.
  if (!comm->blocking) return report(comm->comm->asyncError());
  chorus::CommAccess::impl(*comm->comm).waitForAsyncWork();
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommFinalize")

ncclResult_t pncclCommDestroy(ncclComm_t comm) try { return release(comm, false, "ncclCommDestroy"); }
CHORUS_CATCH("ncclCommDestroy")

ncclResult_t pncclCommAbort(ncclComm_t comm) try { return release(comm, true, "ncclCommAbort"); }
CHORUS_CATCH("ncclCommAbort")

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) try {
  CHORUS_ENTER_OWNER(comm, "ncclCommSplit");
  if (!newcomm) return report(chorus::invalidArgument("ncclCommSplit: newcomm is NULL"));
  ncclConfig_t cfg;
  if (ncclResult_t r = report(readConfig(config, &cfg)); r != ncclSuccess) return r;
  std::unique_ptr<chorus::Communicator> child;
  static_assert(NCCL_SPLIT_NOCOLOR == chorus::Communicator::kNoColor);
  Status st = comm->comm->split(color, key, &child);
  if (!st.isOk()) return report(st.withContext("ncclCommSplit"));
  *newcomm = child ? childShell(comm, std::move(child), config, cfg) : nullptr;
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommSplit")

ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                             ncclConfig_t* config, int shrinkFlags) try {
  CHORUS_ENTER_MANAGEMENT(comm, "ncclCommShrink");
  if (!newcomm) return report(chorus::invalidArgument("ncclCommShrink: newcomm is NULL"));
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList)) {
    return report(chorus::invalidArgument("ncclCommShrink: excludeRanksList is NULL or excludeRanksCount < 0"));
  }
  if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT) {
    return report(chorus::invalidArgument("ncclCommShrink: invalid shrinkFlags " + std::to_string(shrinkFlags)));
  }
  ncclConfig_t cfg;
  if (ncclResult_t r = report(readConfig(config, &cfg)); r != ncclSuccess) return r;
  if (shrinkFlags == NCCL_SHRINK_ABORT) revoke(comm);  // the shrink below needs only the rendezvous
  std::unique_ptr<chorus::Communicator> child;
  Status st = comm->comm->shrink(std::vector<int>(excludeRanksList, excludeRanksList + excludeRanksCount), &child);
  if (!st.isOk()) return report(st.withContext("ncclCommShrink"));
  *newcomm = childShell(comm, std::move(child), config, cfg);
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommShrink")

ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) try {
  CHORUS_ENTER_SHARED(comm, "ncclCommRevoke");
  if (revokeFlags != NCCL_REVOKE_DEFAULT) {
    return report(chorus::invalidArgument("ncclCommRevoke: revokeFlags must be 0, not " + std::to_string(revokeFlags)));
  }
  revoke(comm);
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommRevoke")

const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the chorus developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* pncclGetLastError(ncclComm_t) { return chorus::capi::lastError(); }

void pncclResetDebugInit(void) {
  chorus::reloadSettings();
  chorus::log::reinitialize();
}

ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) try {
  CHORUS_ENTER_SHARED(comm, "ncclCommGetAsyncError");
  if (!asyncError) return report(chorus::invalidArgument("ncclCommGetAsyncError: asyncError is NULL"));
  // A revoked communicator is quiescent once ncclCommRevoke returned: its abort is not an error to report.
  *asyncError = comm->revoked.load(std::memory_order_acquire) ? ncclSuccess : resultOf(comm->comm->asyncError());
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommGetAsyncError")

ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) try {
  CHORUS_ENTER_SHARED(comm, "ncclCommCount");
  if (!count) return report(chorus::invalidArgument("ncclCommCount: count is NULL"));
  *count = comm->comm->size();
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommCount")

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) try {
  CHORUS_ENTER_SHARED(comm, "ncclCommCuDevice");
  if (!device) return report(chorus::invalidArgument("ncclCommCuDevice: device is NULL"));
  *device = comm->cudaDevice;
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommCuDevice")

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) try {
  CHORUS_ENTER_SHARED(comm, "ncclCommUserRank");
  if (!rank) return report(chorus::invalidArgument("ncclCommUserRank: rank is NULL"));
  *rank = comm->comm->rank();
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommUserRank")

ncclResult_t pncclCommRegister(const ncclComm_t comm, void*, size_t, void** handle) try {
  CHORUS_ENTER_SHARED(comm, "ncclCommRegister");
  if (!handle) return report(chorus::invalidArgument("ncclCommRegister: handle is NULL"));
  *handle = nullptr;
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommRegister")

ncclResult_t pncclCommDeregister(const ncclComm_t comm, void*) try {
  CHORUS_ENTER_SHARED(comm, "ncclCommDeregister");
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommDeregister")

ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm) try {
  CHORUS_ENTER_SHARED(comm, "ncclRedOpCreatePreMulSum");
  if (ncclResult_t r = report(checkType(datatype, "ncclRedOpCreatePreMulSum")); r != ncclSuccess) return r;
  if (!op || !scalar) return report(chorus::invalidArgument("ncclRedOpCreatePreMulSum: op or scalar is NULL"));
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
    return report(chorus::invalidArgument("ncclRedOpCreatePreMulSum: invalid residence"));
  }
  const double immediate =
      residence == ncclScalarHostImmediate ? chorus::kernels::elementAsDouble(scalar, dt(datatype)) : 1.0;
  ncclComm::PreMulOp p{true, datatype, residence, immediate, scalar};
  std::lock_guard<std::mutex> lock(comm->mutex);
  size_t index = 0;
  while (index < comm->preMulOps.size() && comm->preMulOps[index].inUse) ++index;
  if (index == comm->preMulOps.size())
    comm->preMulOps.push_back(p);
  else
    comm->preMulOps[index] = p;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(index));
  return ncclSuccess;
}
CHORUS_CATCH("ncclRedOpCreatePreMulSum")

ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) try {
  CHORUS_ENTER_SHARED(comm, "ncclRedOpDestroy");
  std::lock_guard<std::mutex> lock(comm->mutex);
  int v = static_cast<int>(op);
  size_t index = static_cast<size_t>(v - ncclNumOps);
  if (v < ncclNumOps || index >= comm->preMulOps.size() || !comm->preMulOps[index].inUse) {
    return report(chorus::invalidArgument("ncclRedOpDestroy: op " + std::to_string(v) + " was not created here"));
  }
  comm->preMulOps[index].inUse = false;
  return ncclSuccess;
}
CHORUS_CATCH("ncclRedOpDestroy")

ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                            ncclComm_t comm, cudaStream_t stream) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclAllReduce");
  CHORUS_CHECK(checkType(datatype, "ncclAllReduce"));
  RedOp o;
  CHORUS_CHECK(resolveOp(comm, op, datatype, "ncclAllReduce", &o));
  return report(comm->comm->allReduce(sendbuff, recvbuff, count, dt(datatype), o));
}
CHORUS_CATCH("ncclAllReduce")

ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclReduceScatter");
  CHORUS_CHECK(checkType(datatype, "ncclReduceScatter"));
  RedOp o;
  CHORUS_CHECK(resolveOp(comm, op, datatype, "ncclReduceScatter", &o));
  return report(comm->comm->reduceScatter(sendbuff, recvbuff, recvcount, dt(datatype), o));
}
CHORUS_CATCH("ncclReduceScatter")

ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclReduce");
  CHORUS_CHECK(checkType(datatype, "ncclReduce"));
  RedOp o;
  CHORUS_CHECK(resolveOp(comm, op, datatype, "ncclReduce", &o));
  return report(comm->comm->reduce(sendbuff, recvbuff, count, dt(datatype), o, root));
}
CHORUS_CATCH("ncclReduce")

ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclAllGather");
  CHORUS_CHECK(checkType(datatype, "ncclAllGather"));
  return report(comm->comm->allGather(sendbuff, recvbuff, sendcount, dt(datatype)));
}
CHORUS_CATCH("ncclAllGather")

ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclBroadcast");
  CHORUS_CHECK(checkType(datatype, "ncclBroadcast"));
  return report(comm->comm->broadcast(sendbuff, recvbuff, count, dt(datatype), root));
}
CHORUS_CATCH("ncclBroadcast")

ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream) try {
  return pncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}
CHORUS_CATCH("ncclBcast")

ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclAlltoAll");
  CHORUS_CHECK(checkType(datatype, "ncclAlltoAll"));
  return report(comm->comm->alltoAll(sendbuff, recvbuff, count, dt(datatype)));
}
CHORUS_CATCH("ncclAlltoAll")

ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclGather");
  CHORUS_CHECK(checkType(datatype, "ncclGather"));
  return report(comm->comm->gather(sendbuff, recvbuff, count, dt(datatype), root));
}
CHORUS_CATCH("ncclGather")

ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclScatter");
  CHORUS_CHECK(checkType(datatype, "ncclScatter"));
  return report(comm->comm->scatter(sendbuff, recvbuff, count, dt(datatype), root));
}
CHORUS_CATCH("ncclScatter")

ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclSend");
  CHORUS_CHECK(checkType(datatype, "ncclSend"));
  return report(comm->comm->send(sendbuff, count, dt(datatype), peer));
}
CHORUS_CATCH("ncclSend")

ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclRecv");
  CHORUS_CHECK(checkType(datatype, "ncclRecv"));
  return report(comm->comm->recv(recvbuff, count, dt(datatype), peer));
}
CHORUS_CATCH("ncclRecv")

ncclResult_t pncclGroupStart(void) try { return report(chorus::groupStart()); }
CHORUS_CATCH("ncclGroupStart")
ncclResult_t pncclGroupEnd(void) try { return report(chorus::groupEnd()); }
CHORUS_CATCH("ncclGroupEnd")

ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t*) try {
  return report(chorus::invalidUsage("ncclGroupSimulateEnd is not supported by chorus"));
}
CHORUS_CATCH("ncclGroupSimulateEnd")

CHORUS_NCCL_ALIAS(ncclMemAlloc)
CHORUS_NCCL_ALIAS(ncclMemFree)
CHORUS_NCCL_ALIAS(ncclGetVersion)
CHORUS_NCCL_ALIAS(ncclGetUniqueId)
CHORUS_NCCL_ALIAS(ncclCommInitRankConfig)
CHORUS_NCCL_ALIAS(ncclCommInitRank)
CHORUS_NCCL_ALIAS(ncclCommInitRankScalable)
CHORUS_NCCL_ALIAS(ncclCommInitAll)
CHORUS_NCCL_ALIAS(ncclCommFinalize)
CHORUS_NCCL_ALIAS(ncclCommDestroy)
CHORUS_NCCL_ALIAS(ncclCommAbort)
CHORUS_NCCL_ALIAS(ncclCommSplit)
CHORUS_NCCL_ALIAS(ncclCommShrink)
CHORUS_NCCL_ALIAS(ncclCommRevoke)
CHORUS_NCCL_ALIAS(ncclGetErrorString)
CHORUS_NCCL_ALIAS(ncclGetLastError)
CHORUS_NCCL_ALIAS(ncclResetDebugInit)
CHORUS_NCCL_ALIAS(ncclCommGetAsyncError)
CHORUS_NCCL_ALIAS(ncclCommCount)
CHORUS_NCCL_ALIAS(ncclCommCuDevice)
CHORUS_NCCL_ALIAS(ncclCommUserRank)
CHORUS_NCCL_ALIAS(ncclCommRegister)
CHORUS_NCCL_ALIAS(ncclCommDeregister)
CHORUS_NCCL_ALIAS(ncclRedOpCreatePreMulSum)
CHORUS_NCCL_ALIAS(ncclRedOpDestroy)
CHORUS_NCCL_ALIAS(ncclAllReduce)
CHORUS_NCCL_ALIAS(ncclReduceScatter)
CHORUS_NCCL_ALIAS(ncclReduce)
CHORUS_NCCL_ALIAS(ncclAllGather)
CHORUS_NCCL_ALIAS(ncclBroadcast)
CHORUS_NCCL_ALIAS(ncclBcast)
CHORUS_NCCL_ALIAS(ncclAlltoAll)
CHORUS_NCCL_ALIAS(ncclGather)
CHORUS_NCCL_ALIAS(ncclScatter)
CHORUS_NCCL_ALIAS(ncclSend)
CHORUS_NCCL_ALIAS(ncclRecv)
CHORUS_NCCL_ALIAS(ncclGroupStart)
CHORUS_NCCL_ALIAS(ncclGroupEnd)
CHORUS_NCCL_ALIAS(ncclGroupSimulateEnd)

}  // extern "C"

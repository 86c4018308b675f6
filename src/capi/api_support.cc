#include "capi/api_support.hpp"

#include <cstring>
#include <exception>
#include <mutex>
#include <new>

#include "core/log.hpp"
#include "gpu/runtime.hpp"
#include "kernels/element_value.hpp"

namespace chorus::capi {

namespace {
std::mutex gErrorMutex;
std::string gLastError;
thread_local std::string tLastErrorCopy;
}  // namespace

ncclResult_t resultOf(const Status& st) {
  if (st.code() == ErrorCode::kTimeout) return ncclSystemError;
  return static_cast<ncclResult_t>(st.code());
}

ncclResult_t reportError(const Status& st) {
  if (st.code() == ErrorCode::kInProgress) return ncclInProgress;
  {
    std::lock_guard<std::mutex> lock(gErrorMutex);
    gLastError = st.message();
  }
  CHORUS_WARN(kColl, "%s", st.message().c_str());
  return resultOf(st);
}

const char* lastError() {
  std::lock_guard<std::mutex> lock(gErrorMutex);
  tLastErrorCopy = gLastError;
  return tLastErrorCopy.c_str();
}

// An allocation failure is ncclSystemError, anything else ncclInternalError.
ncclResult_t caught(const char* fn) noexcept {
  ncclResult_t code = ncclInternalError;
  try {
    try {
      throw;
    } catch (const std::bad_alloc&) {
      code = ncclSystemError;
      return report(systemError(std::string(fn) + ": out of memory"));
    } catch (const std::exception& e) {
      return report(internalError(std::string(fn) + ": unexpected exception: " + e.what()));
    } catch (...) {
      return report(internalError(std::string(fn) + ": unexpected exception"));
    }
  } catch (...) {
    return code;  // reporting failed too (no memory for the message)
  }
}

Status checkShell(ncclComm_t comm, const char* fn) {
  if (!comm) return invalidArgument(std::string(fn) + ": comm is NULL");
  const unsigned magic = comm->magic.load(std::memory_order_relaxed);
  if (magic == ncclComm::kDead) return invalidArgument(std::string(fn) + ": comm was already destroyed or aborted");
  if (magic != ncclComm::kAlive) return invalidArgument(std::string(fn) + ": comm is not a communicator");
  return Status::ok();
}

Status checkComm(ncclComm_t comm, bool entered, const char* fn) {
  if (!entered) return invalidArgument(std::string(fn) + ": comm was already destroyed or aborted");
  if (!comm->comm) return invalidUsage(std::string(fn) + ": comm failed to initialize");
  return Status::ok();
}

Status refusedState(ncclComm_t comm, const char* fn) {
  if (comm->revoked.load(std::memory_order_acquire)) {
    return invalidUsage(std::string(fn) + ": comm was revoked (ncclCommRevoke)");
  }
  return invalidUsage(std::string(fn) + ": comm is suspended (ncclCommSuspend); call ncclCommResume first");
}

Status readConfig(const ncclConfig_t* config, ncclConfig_t* out) {
  ncclConfig_t defaults = NCCL_CONFIG_INITIALIZER;
  *out = defaults;
  if (!config) return Status::ok();
  size_t bytes = config->size < sizeof(ncclConfig_t) ? config->size : sizeof(ncclConfig_t);
  if (bytes < offsetof(ncclConfig_t, blocking)) return invalidArgument("ncclConfig_t: size is too small");
  memcpy(out, config, bytes);
  if (out->magic != NCCL_API_MAGIC) {
    return invalidArgument("ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
  }
  if (out->blocking != NCCL_CONFIG_UNDEF_INT && out->blocking != 0 && out->blocking != 1) {
    return invalidArgument("ncclConfig_t: blocking must be 0 or 1");
  }
  if (out->numRmaCtx != NCCL_CONFIG_UNDEF_INT && out->numRmaCtx < 0) {
    return invalidArgument("ncclConfig_t: numRmaCtx must be 0 or more");
  }
  return Status::ok();
}

Status typeError(ncclDataType_t t, const char* fn) {
  return invalidArgument(std::string(fn) + ": invalid datatype " + std::to_string(static_cast<int>(t)));
}

Status resolveCreatedOp(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t type, const char* fn, RedOp* out) {
  const int v = static_cast<int>(op);
  std::lock_guard<std::mutex> lock(comm->mutex);
  size_t index = static_cast<size_t>(v - ncclNumOps);
  if (v < ncclNumOps || index >= comm->preMulOps.size() || !comm->preMulOps[index].inUse) {
    return invalidArgument(std::string(fn) + ": invalid reduction op " + std::to_string(v));
  }
  const auto& p = comm->preMulOps[index];
  if (p.datatype != type) return invalidArgument(std::string(fn) + ": PreMulSum op was created for another datatype");
  if (p.residence == ncclScalarHostImmediate) {
    *out = RedOp::preMulSum(p.immediate);
  } else if (gpu::memoryTypeOf(p.pointer) == gpu::MemoryType::kHost) {
    *out = RedOp::preMulSum(kernels::elementAsDouble(p.pointer, dt(type)));  // read at each call
  } else {
    *out = RedOp::preMulSumOnDevice(p.pointer);  // read when the stream reaches the call
  }
  return Status::ok();
}

chorus::CommConfig blockingConfig(bool blocking) {
  chorus::CommConfig config;
  config.blocking = blocking;
  return config;
}

ncclResult_t initRank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, ncclConfig_t* config,
                      const char* fn) {
  if (!out) return report(chorus::invalidArgument(std::string(fn) + ": comm is NULL"));
  ncclConfig_t cfg;
  if (ncclResult_t r = report(readConfig(config, &cfg)); r != ncclSuccess) return r;
  chorus::UniqueId uid;
  memcpy(uid.bytes.data(), id.internal, sizeof(id.internal));
  auto* comm = new ncclComm();
  comm->blocking = cfg.blocking != 0;
  comm->cudaDevice = chorus::gpu::currentDevice();
  chorus::CommConfig commConfig = blockingConfig(comm->blocking);
  // chorus connects the one-sided channel only where the program asks for it (NCCL's default is one context).
  commConfig.oneSidedContexts = cfg.numRmaCtx == NCCL_CONFIG_UNDEF_INT ? 0 : cfg.numRmaCtx;
  Status st = chorus::Communicator::create(uid, nranks, rank, &comm->comm, commConfig);
  if (st.code() == chorus::ErrorCode::kInProgress) {
    *out = comm;  // nonblocking: the init runs on the communicator's thread, ncclCommGetAsyncError tells its end
    return ncclInProgress;
  }
  if (!st.isOk()) {
    delete comm;  // never handed out: nobody else can hold it
    *out = nullptr;
    return report(st.withContext(fn));
  }
  *out = comm;
  return ncclSuccess;
}

}  // namespace chorus::capi

// The nccl*Config collectives of NCCL 2.31: each plain collective with the options of one call, ncclCollConfig_t.
// algSelection becomes the call's algorithm selection (CollArgs::algorithms, tuner/call_selection.hpp), which the
// selector honours for that call alone; launchCompletionEvent is recorded on the call's stream behind it.
#include <algorithm>
#include <cstring>

#include "capi/api_support.hpp"
#include "chorus/coll_args.hpp"
#include "chorus/stream.hpp"
#include "comm/group.hpp"
#include "gpu/runtime.hpp"

using chorus::CollArgs;
using chorus::Collective;
using chorus::RedOp;
using chorus::Status;
using chorus::capi::checkType;
using chorus::capi::dt;
using chorus::capi::report;
using chorus::capi::resolveOp;

namespace {

// 2.31's struct ends where 2.32 added launchCompletionEvent: no nccl.h has a smaller one.
constexpr size_t kSmallestCollConfig = offsetof(ncclCollConfig_t, launchCompletionEvent);

struct CallOptions {
  const char* algorithms = nullptr;
  bool required = true;
  cudaEvent_t launchCompletionEvent = nullptr;
};

// The caller's struct read by its declared size (no byte past it, nor past this header's struct), checked.
Status readCollConfig(const ncclCollConfig_t* config, const char* fn, CallOptions* out) {
  *out = CallOptions{};
  if (!config) return Status::ok();
  const std::string where = std::string(fn) + ": ncclCollConfig_t";
  if (config->size < kSmallestCollConfig) {
    return chorus::invalidArgument(where + " size " + std::to_string(config->size) + " is smaller than any nccl.h's (" +
                                   std::to_string(kSmallestCollConfig) + ")");
  }
  ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
  memcpy(&c, config, std::min(config->size, sizeof(c)));
  if (c.size > sizeof(c)) c.launchCompletionEvent = config->launchCompletionEvent;  // a newer, larger struct
  if (c.magic != NCCL_API_MAGIC)
    return chorus::invalidArgument(where + " not initialized via NCCL_COLLCONFIG_INITIALIZER");
  if (c.forceAlgSelection != NCCL_CONFIG_UNDEF_INT && c.forceAlgSelection != 0 && c.forceAlgSelection != 1)
    return chorus::invalidArgument(where + ": forceAlgSelection must be 0 or 1");
  const int ctaPolicies = NCCL_CTA_POLICY_EFFICIENCY | NCCL_CTA_POLICY_ZERO;
  if (c.CTAPolicy != NCCL_CONFIG_UNDEF_INT && (c.CTAPolicy & ~ctaPolicies) != 0)
    return chorus::invalidArgument(where + ": CTAPolicy " + std::to_string(c.CTAPolicy) + " is no NCCL_CTA_POLICY_*");
  out->algorithms = c.algSelection;
  out->required = c.forceAlgSelection != 0;
  out->launchCompletionEvent = c.size >= sizeof(ncclCollConfig_t) ? c.launchCompletionEvent : nullptr;
  if (out->launchCompletionEvent && chorus::group::active())
    return chorus::invalidUsage(where + ": launchCompletionEvent inside a group (chorus records it on single calls)");
  return Status::ok();
}

// Runs `args` with the call's options; called inside the communicator's gate.
ncclResult_t runConfigured(ncclComm_t comm, CollArgs args, cudaStream_t stream, const ncclCollConfig_t* config,
                           const char* fn) {
  CallOptions options;
  CHORUS_CHECK(readCollConfig(config, fn, &options));
  args.algorithms = options.algorithms;
  args.algorithmsRequired = options.required;
  Status st = comm->comm->run(args);
  if ((st.isOk() || st.code() == chorus::ErrorCode::kInProgress) && options.launchCompletionEvent) {
    Status recorded = chorus::gpu::recordEvent(options.launchCompletionEvent, stream);
    if (!recorded.isOk()) return report(recorded.withContext(std::string(fn) + ": launchCompletionEvent"));
  }
  return report(st);
}

}  // namespace

extern "C" {

ncclResult_t pncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                  const ncclCollConfig_t* config) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclAllReduceConfig");
  CHORUS_CHECK(checkType(datatype, "ncclAllReduceConfig"));
  RedOp o;
  CHORUS_CHECK(resolveOp(comm, op, datatype, "ncclAllReduceConfig", &o));
  return runConfigured(comm, CollArgs(Collective::kAllReduce, sendbuff, recvbuff, count, dt(datatype), o), stream,
                       config, "ncclAllReduceConfig");
}
CHORUS_CATCH("ncclAllReduceConfig")

ncclResult_t pncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                      const ncclCollConfig_t* config) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclReduceScatterConfig");
  CHORUS_CHECK(checkType(datatype, "ncclReduceScatterConfig"));
  RedOp o;
  CHORUS_CHECK(resolveOp(comm, op, datatype, "ncclReduceScatterConfig", &o));
  return runConfigured(comm, CollArgs(Collective::kReduceScatter, sendbuff, recvbuff, recvcount, dt(datatype), o),
                       stream, config, "ncclReduceScatterConfig");
}
CHORUS_CATCH("ncclReduceScatterConfig")

ncclResult_t pncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                               ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                               const ncclCollConfig_t* config) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclReduceConfig");
  CHORUS_CHECK(checkType(datatype, "ncclReduceConfig"));
  RedOp o;
  CHORUS_CHECK(resolveOp(comm, op, datatype, "ncclReduceConfig", &o));
  return runConfigured(comm, CollArgs(Collective::kReduce, sendbuff, recvbuff, count, dt(datatype), o, root), stream,
                       config, "ncclReduceConfig");
}
CHORUS_CATCH("ncclReduceConfig")

ncclResult_t pncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                  ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclAllGatherConfig");
  CHORUS_CHECK(checkType(datatype, "ncclAllGatherConfig"));
  return runConfigured(comm, CollArgs(Collective::kAllGather, sendbuff, recvbuff, sendcount, dt(datatype)), stream,
                       config, "ncclAllGatherConfig");
}
CHORUS_CATCH("ncclAllGatherConfig")

ncclResult_t pncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                  ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclBroadcastConfig");
  CHORUS_CHECK(checkType(datatype, "ncclBroadcastConfig"));
  return runConfigured(comm, CollArgs(Collective::kBroadcast, sendbuff, recvbuff, count, dt(datatype), {}, root),
                       stream, config, "ncclBroadcastConfig");
}
CHORUS_CATCH("ncclBroadcastConfig")

ncclResult_t pncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclAlltoAllConfig");
  CHORUS_CHECK(checkType(datatype, "ncclAlltoAllConfig"));
  return runConfigured(comm, CollArgs(Collective::kAlltoAll, sendbuff, recvbuff, count, dt(datatype)), stream, config,
                       "ncclAlltoAllConfig");
}
CHORUS_CATCH("ncclAlltoAllConfig")

ncclResult_t pncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                               ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclGatherConfig");
  CHORUS_CHECK(checkType(datatype, "ncclGatherConfig"));
  return runConfigured(comm, CollArgs(Collective::kGather, sendbuff, recvbuff, count, dt(datatype), {}, root), stream,
                       config, "ncclGatherConfig");
}
CHORUS_CATCH("ncclGatherConfig")

ncclResult_t pncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config) try {
  chorus::StreamScope streamScope(stream);
  CHORUS_ENTER_OWNER(comm, "ncclScatterConfig");
  CHORUS_CHECK(checkType(datatype, "ncclScatterConfig"));
  return runConfigured(comm, CollArgs(Collective::kScatter, sendbuff, recvbuff, count, dt(datatype), {}, root), stream,
                       config, "ncclScatterConfig");
}
CHORUS_CATCH("ncclScatterConfig")

CHORUS_NCCL_ALIAS(ncclAllReduceConfig)
CHORUS_NCCL_ALIAS(ncclReduceScatterConfig)
CHORUS_NCCL_ALIAS(ncclReduceConfig)
CHORUS_NCCL_ALIAS(ncclAllGatherConfig)
CHORUS_NCCL_ALIAS(ncclBroadcastConfig)
CHORUS_NCCL_ALIAS(ncclAlltoAllConfig)
CHORUS_NCCL_ALIAS(ncclGatherConfig)
CHORUS_NCCL_ALIAS(ncclScatterConfig)

}  // extern "C"

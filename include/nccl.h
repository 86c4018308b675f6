/** @file
 * nccl.h -- the NCCL-compatible C API of chorus.
 *
 * Names, enum values, struct layouts and functions follow the nccl.h of NCCL 2.32, so a program written for NCCL
 * compiles against this header and runs on chorus's libnccl.so.2 (docs/nccl.md lists the functions of 2.29-2.32 that
 * return an error naming what chorus does not do). With CUDA present, cudaStream_t is CUDA's own
 * type, otherwise an opaque pointer of the same shape. A call on host memory, with any stream, completes before
 * it returns; a call on device memory is enqueued on its stream and returns at once. Inside
 * ncclGroupStart/ncclGroupEnd the work starts at ncclGroupEnd.
 *
 * The version macros say 2.27.7, not 2.28: programs read NCCL_VERSION_CODE >= 2.28 as "NCCL's device API is
 * here" and include nccl_device.h (nccl-tests does), which chorus does not provide. Everything 2.28 added to
 * nccl.h itself is declared below and works (ncclAlltoAll, ncclGather and ncclScatter among it).
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__) || defined(CUDART_VERSION)
#define CHORUS_NCCL_WITH_CUDA 1
#elif defined(__has_include)
#if __has_include(<cuda_runtime.h>)
#define CHORUS_NCCL_WITH_CUDA 1
#endif
#endif

/* Under CUDA, as NVIDIA's header: CUDA's runtime and its half, bfloat16 and (C++) fp8 types (half, __nv_bfloat16,
 * __nv_fp8_e4m3, __nv_fp8_e5m2), which programs written for NCCL take from nccl.h. */
#ifdef CHORUS_NCCL_WITH_CUDA
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#if CUDART_VERSION >= 11000
#include <cuda_bf16.h>
#endif
#if defined(__cplusplus) && CUDART_VERSION >= 11080
#include <cuda_fp8.h>
#endif
#else
/** Without CUDA: an opaque pointer of the shape of CUDA's stream handle. */
typedef struct CUstream_st* cudaStream_t;
/** Without CUDA: an opaque pointer of the shape of CUDA's event handle. */
typedef struct CUevent_st* cudaEvent_t;
#endif

/** The NCCL API level of this header, 2.27.7 (see the file's description). */
#define NCCL_MAJOR 2
/** See NCCL_MAJOR. */
#define NCCL_MINOR 27
/** See NCCL_MAJOR. */
#define NCCL_PATCH 7
/** See NCCL_MAJOR. */
#define NCCL_SUFFIX ""
/** NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH). */
#define NCCL_VERSION_CODE 22707
/** A version as one number, NCCL's way: X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z after. */
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))

/** Defined by chorus's nccl.h only: lets a program tell at compile time that it builds against chorus. */
#define CHORUS_NCCL_COMPAT 1

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque communicator handle. */
typedef struct ncclComm* ncclComm_t;
/** Opaque handle of a buffer registered with ncclCommWindowRegister. */
typedef struct ncclWindow_vidmem* ncclWindow_t;
/** No communicator. */
#define NCCL_COMM_NULL NULL

/** The size of ncclUniqueId. */
#define NCCL_UNIQUE_ID_BYTES 128
/** The token every rank of a new communicator receives (ncclGetUniqueId): the root's address and a secret. */
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES]; /**< opaque */
} ncclUniqueId;

/** The result of every call; ncclGetLastError gives the message of the last failure. */
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclTimeout = 8, /**< NCCL returns it from device-side waits only; chorus's timed-out waits are ncclSystemError */
  ncclNumResults = 9
} ncclResult_t;

/** An ncclConfig_t integer field left at its default. */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
/** An ncclConfig_t pointer field left at its default. */
#define NCCL_CONFIG_UNDEF_PTR NULL
/** ncclCommSplit's color for a rank that takes part but joins no new communicator. */
#define NCCL_SPLIT_NOCOLOR -1
/** An ncclSimInfo_t float not filled in. */
#define NCCL_UNDEF_FLOAT -1.0f
/** The magic of every versioned struct's initializer (ncclConfig_t, ncclCollConfig_t). */
#define NCCL_API_MAGIC 0xcafebeef

/** ncclCommWindowRegister's flags and the alignment a symmetric window needs. */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01     /**< see NCCL_WIN_DEFAULT */
#define NCCL_WIN_STRICT_ORDERING 0x02    /**< see NCCL_WIN_DEFAULT */
#define NCCL_WIN_GIN_ONLY 0x04           /**< see NCCL_WIN_DEFAULT */
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096 /**< see NCCL_WIN_DEFAULT */

/** ncclConfig_t.CTAPolicy values (GPU scheduling hints; accepted, without effect on host memory). */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01 /**< see NCCL_CTA_POLICY_DEFAULT */
#define NCCL_CTA_POLICY_ZERO 0x02       /**< see NCCL_CTA_POLICY_DEFAULT */

/** ncclCommShrink's flags: shrink as is, or first end the parent's operations in flight. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01 /**< see NCCL_SHRINK_DEFAULT */
/** ncclCommRevoke's flags: none yet, must be 0. */
#define NCCL_REVOKE_DEFAULT 0x00
/** ncclCommSuspend's flags: release the communicator's large buffers until ncclCommResume. */
#define NCCL_SUSPEND_MEM 0x01

/** ncclConfig_t.hostCftMode (NVIDIA's Compute Fabric Transport; accepted, without effect). */
typedef enum {
  ncclHostCftDefault = NCCL_CONFIG_UNDEF_INT,
  ncclHostCftEnable = 1,
  ncclHostCftDisable = 2,
  ncclHostCftFallback = 3
} ncclHostCftMode_t;

/** ncclConfig_t.nvlsHostMode, a bitmask of the NVLink SHARP parts to leave out (accepted, without effect). */
typedef enum {
  ncclNvlsHostModeDefault = NCCL_CONFIG_UNDEF_INT,
  ncclNvlsHostModeEnable = 0,
  ncclNvlsHostModeDisableTransport = 1 << 0,
  ncclNvlsHostModeDisableSymmetricMultimem = 1 << 1,
  ncclNvlsHostModeDisable = INT_MAX
} ncclNvlsHostMode_t;

/** Communicator options. Fill with NCCL_CONFIG_INITIALIZER, then set the fields to change. A program built against
 * an older nccl.h passes a smaller struct, a newer one a larger: its size field tells which fields it has, and
 * chorus reads no byte past it nor any field this header does not know. chorus reads blocking; the other fields tune
 * NCCL's GPU kernels, network plugins and one-sided contexts and are accepted without effect. */
typedef struct ncclConfig_v23200 {
  size_t size;        /**< sizeof the caller's struct: tells which fields a program built against an older header has */
  unsigned int magic; /**< NCCL_API_MAGIC, set by the initializer */
  unsigned int version;    /**< the header version the program was built with */
  int blocking;            /**< 0: a nonblocking communicator (calls return ncclInProgress); default 1 */
  int cgaClusterSize;      /**< GPU kernel tuning, accepted without effect */
  int minCTAs;             /**< GPU kernel tuning, accepted without effect */
  int maxCTAs;             /**< GPU kernel tuning, accepted without effect */
  const char* netName;     /**< NCCL's network plugin name, accepted without effect */
  int splitShare;          /**< share resources with the parent on split, accepted without effect */
  int trafficClass;        /**< network traffic class, accepted without effect */
  const char* commName;    /**< a name for logs, accepted without effect */
  int collnetEnable;       /**< CollNet, accepted without effect */
  int CTAPolicy;           /**< NCCL_CTA_POLICY_*, accepted without effect */
  int shrinkShare;         /**< share resources with the parent on shrink, accepted without effect */
  int nvlsCTAs;            /**< NVLS kernel tuning, accepted without effect */
  int nChannelsPerNetPeer; /**< network channels, accepted without effect */
  int nvlinkCentricSched;  /**< NVLink scheduling, accepted without effect */
  int graphUsageMode;      /**< CUDA graph use, accepted without effect */
  int numRmaCtx;   /**< one-sided contexts: 1 or more connects chorus's one-sided channel at init (unset: none) */
  int maxP2pPeers; /**< concurrent point-to-point peers, accepted without effect */
  int graphStreamOrdering; /**< CUDA graph ordering, accepted without effect */
  int launchOrderImplicit; /**< kernel launch order across communicators, accepted without effect */
  int numRmaSig;           /**< one-sided signals per context, accepted without effect */
  int rmaEagerInit;        /**< one-sided setup at init, accepted without effect */
  int hostCftMode;         /**< ncclHostCftMode_t, accepted without effect */
  int nvlsHostMode;        /**< ncclNvlsHostMode_t, accepted without effect */
} ncclConfig_t;

/** An ncclConfig_t of this header's size and version with every field at its default. */
#define NCCL_CONFIG_INITIALIZER                                                                                    \
  {                                                                                                                \
    sizeof(ncclConfig_t), NCCL_API_MAGIC, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR,                \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,                \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT                                                               \
  }

/** One vendor option of a call's configuration, chained through next. chorus reads none (as NVIDIA's NCCL). */
typedef struct ncclConfigExt {
  struct ncclConfigExt* next; /**< the next option, or NULL */
  struct {
    int vendorId; /**< the vendor's own number */
    int optionId; /**< the option, in the vendor's numbering */
  } key;          /**< which option */
  union {
    int i;
    const char* s;
    void* raw;
  } val; /**< its value */
} ncclConfigExt_t;

/** Options of one collective call (the nccl*Config functions): fill with NCCL_COLLCONFIG_INITIALIZER, then set the
 * fields to change; every rank passes the same. algSelection limits the algorithms the call may run: NCCL's
 * grammar (',' or, '+' and, '^' not; each name matches as a case-insensitive prefix) over chorus's algorithm names
 * (chorus-info lists them) and NCCL's (RING_* is chorus's ring, TREE_* its log-depth algorithms); the selector
 * chooses the fastest of those that can run the call. With forceAlgSelection 1 (the default) a selection that
 * leaves none, or does not parse, is ncclInvalidArgument; with 0 the call falls back to the selector's choice. The
 * CTA fields tune NCCL's GPU kernels (CTAPolicy checked; without effect here); userProfilerTag is for NCCL's
 * profiler plugins, which chorus does not load (accepted, without effect); launchCompletionEvent is recorded on the
 * call's stream behind the call (single calls only: inside a group it is ncclInvalidUsage). */
typedef struct ncclCollConfig_v23200 {
  size_t size;                       /**< sizeof the caller's struct */
  unsigned int magic;                /**< NCCL_API_MAGIC, set by the initializer */
  unsigned int version;              /**< the header version the program was built with */
  ncclConfigExt_t* ext;              /**< vendor options, NULL: none (chorus reads none) */
  int minCTAs;                       /**< GPU kernel tuning, accepted without effect */
  int maxCTAs;                       /**< GPU kernel tuning, accepted without effect */
  int nvlsCTAs;                      /**< GPU kernel tuning, accepted without effect */
  int cgaClusterSize;                /**< GPU kernel tuning, accepted without effect */
  const char* algSelection;          /**< the algorithms the call may use; NULL or "": the selector's choice */
  int forceAlgSelection;             /**< 1: a selection that cannot be honoured is an error; 0: fall back */
  int CTAPolicy;                     /**< NCCL_CTA_POLICY_* or UNDEF, checked, without effect */
  uint64_t userProfilerTag;          /**< a tag for NCCL's profiler plugins, accepted without effect */
  cudaEvent_t launchCompletionEvent; /**< recorded on the stream behind the call; NULL: none (2.32) */
} ncclCollConfig_t;

/** An ncclCollConfig_t of this header's size and version with every field at its default. */
#define NCCL_COLLCONFIG_INITIALIZER                                                                                    \
  {                                                                                                                    \
    sizeof(ncclCollConfig_t), NCCL_API_MAGIC, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_CONFIG_UNDEF_PTR, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                    \
        NCCL_CONFIG_UNDEF_PTR, 1, NCCL_CONFIG_UNDEF_INT, 0, NCCL_CONFIG_UNDEF_PTR                                      \
  }

/** What ncclCommMemStats reports. */
typedef enum {
  ncclStatGpuMemSuspend = 0,   /**< bytes ncclCommSuspend(NCCL_SUSPEND_MEM) would release now */
  ncclStatGpuMemSuspended = 1, /**< bytes released by a suspend and not yet restored */
  ncclStatGpuMemPersist = 2,   /**< bytes the communicator keeps through a suspend */
  ncclStatGpuMemTotal = 3      /**< all the communicator's buffers: the two above together */
} ncclCommMemStat_t;

/** One signal ncclWaitSignal waits for: opCnt signals from peer at sigIdx of context ctx. */
typedef struct {
  int opCnt;  /**< how many signals to wait for */
  int peer;   /**< the rank that signals */
  int sigIdx; /**< the signal's index */
  int ctx;    /**< the signal's context */
} ncclWaitSignalDesc_t;

/** A parameter bound by ncclParamBind. */
typedef struct ncclParamHandle* ncclParamHandle_t;

/** Result of ncclGroupSimulateEnd. */
typedef struct ncclSimInfo_v22200 {
  size_t size;          /**< sizeof the caller's struct */
  unsigned int magic;   /**< 0x74685283, set by the initializer */
  unsigned int version; /**< the header version the program was built with */
  float estimatedTime;  /**< the estimated time of the group (not filled in: ncclGroupSimulateEnd is not supported) */
} ncclSimInfo_t;

/** An ncclSimInfo_t of this header's size and version. */
#define NCCL_SIM_INFO_INITIALIZER \
  { sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_UNDEF_FLOAT }

/** ncclEncryptionConfig_t.mode: plaintext (the default). */
#define NCCL_ENCRYPTION_MODE_NONE 0
/** ncclEncryptionConfig_t.mode: TLS 1.3 with the pre-shared key in psk. */
#define NCCL_ENCRYPTION_MODE_PSK 1

/** What ncclSetEncryption sets: how chorus's own sockets (the rendezvous and the tcp transport) are protected. */
typedef struct {
  size_t size;          /**< sizeof the caller's struct */
  unsigned int magic;   /**< NCCL_API_MAGIC, set by the initializer */
  unsigned int version; /**< the header version the program was built with */
  int mode;             /**< NCCL_ENCRYPTION_MODE_NONE or NCCL_ENCRYPTION_MODE_PSK */
  const char* psk;      /**< with NCCL_ENCRYPTION_MODE_PSK: the key, a string of at least 32 bytes, the same on every
                             process of the job */
} ncclEncryptionConfig_t;

/** An ncclEncryptionConfig_t of this header's size and version: plaintext. */
#define NCCL_ENCRYPTION_CONFIG_INITIALIZER                                                            \
  {                                                                                                   \
    sizeof(ncclEncryptionConfig_t), NCCL_API_MAGIC, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
        NCCL_ENCRYPTION_MODE_NONE, NCCL_CONFIG_UNDEF_PTR                                              \
  }

/** Sizes ncclRedOp_t as NCCL's header does. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
/** Reduction operations; values from ncclNumOps up are ops made by ncclRedOpCreatePreMulSum. */
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

/** The element type of a call's buffers. */
typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/** Where ncclRedOpCreatePreMulSum's scalar lives: read from device memory when the call runs, or copied at creation. */
typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/** Device memory where the process sees a GPU (cudaMalloc), else page-aligned host memory. */
ncclResult_t ncclMemAlloc(void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size);
/** Frees a buffer of ncclMemAlloc. */
ncclResult_t ncclMemFree(void* ptr);
ncclResult_t pncclMemFree(void* ptr);

/** The NCCL API level chorus implements, as NCCL_VERSION_CODE counts it (22707). */
ncclResult_t ncclGetVersion(int* version);
ncclResult_t pncclGetVersion(int* version);

/** Sets how this process's later connections are protected: with NCCL_ENCRYPTION_MODE_PSK, the rendezvous and the
 * tcp transport speak TLS 1.3 keyed by config->psk (call it before ncclGetUniqueId, with the same key on every
 * process); NULL or NCCL_ENCRYPTION_MODE_NONE returns to plaintext. Shared memory never leaves the host and stays as
 * it is; UCX and InfiniBand traffic is not covered. ncclInvalidArgument for a config not made by the initializer, an
 * unknown mode or a key under 32 bytes; ncclInvalidUsage when chorus was built without OpenSSL 3. */
ncclResult_t ncclSetEncryption(const ncclEncryptionConfig_t* config);
ncclResult_t pncclSetEncryption(const ncclEncryptionConfig_t* config);

/** Makes an id and starts the rendezvous root in the calling process (NCCL_COMM_ID: an id for that address). */
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

/** ncclCommInitRank with options (NULL: the defaults); config->blocking = 0 makes a nonblocking communicator. */
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);
/** Joins communicator commId as rank of nranks; every rank calls it. Inside a group it runs at ncclGroupEnd. */
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
/** ndev ranks in this process; devlist is accepted and ignored (host memory). */
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
/** ncclCommInitRankConfig with nId ids; chorus meets through the first (one rendezvous root serves any size). */
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                      ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                       ncclConfig_t* config);
/** Waits for the communicator's queued work (a nonblocking one's); it can then be destroyed. */
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm);
/** Ends the communicator and frees what it holds; a later call with the handle is ncclInvalidArgument. */
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm);
/** Ends the communicator's operations in flight with an error (any thread, any time) and frees it; the peers learn it
 * at once. */
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm);
/** Ranks of comm with the same color form newcomm, ordered by (key, rank); NCCL_SPLIT_NOCOLOR takes part and gets NULL.
 */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
/** A communicator of the ranks not in excludeRanksList, renumbered in their order. Every remaining rank calls it
 * with the same list; the excluded ranks do not. NCCL_SHRINK_ABORT first ends comm's operations in flight. With
 * config NULL the new communicator inherits comm's configuration. */
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                            ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                             ncclConfig_t* config, int shrinkFlags);
/** Ends comm's operations in flight and fails its later operations; comm can still be destroyed or shrunk.
 * ncclCommGetAsyncError says ncclSuccess once nothing is in flight any more. revokeFlags must be 0. */
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);
/** An id for growing comm by ncclCommGrow: one rank of comm (the coordinator) makes it and hands it to the joining
 * ranks; it serves one grow, and comm has at most one outstanding. */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
/** A communicator of nRanks: comm's ranks keep their numbers (they pass comm and rank -1, the coordinator its id,
 * the others NULL), the joining ranks take comm's size .. nRanks - 1 (they pass NULL, the id and their rank).
 * Every rank of comm and every joining rank calls it. With config NULL comm's ranks keep its configuration. */
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                          ncclConfig_t* config);
ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                           ncclConfig_t* config);
/** flags NCCL_SUSPEND_MEM: releases the communicator's large buffers (scratch, cached plans); its calls are
 * ncclInvalidUsage until ncclCommResume. Nothing may be in flight. */
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags);
/** Ends a suspend: the buffers come back as calls need them. */
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t pncclCommResume(ncclComm_t comm);
/** The bytes of one kind (ncclCommMemStat_t) the communicator holds in its own buffers, host or device. */
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);

/** A short text for a result code. */
const char* ncclGetErrorString(ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result);
/** The message of the last error in this process. */
const char* ncclGetLastError(ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm);
/** Re-reads NCCL_DEBUG / CHORUS_DEBUG and the other settings from the environment. */
void ncclResetDebugInit(void);
void pncclResetDebugInit(void);
/** The first failure of any call on comm, ncclInProgress while a nonblocking communicator's work runs, else
 * ncclSuccess. */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
/** The number of ranks. */
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);
/** The CUDA device current when the communicator was created; -1 without one. */
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);
/** This rank's number. */
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);

/** Registration is accepted for any buffer and changes nothing on host memory. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
/** Ends a registration of ncclCommRegister. */
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);
/** A window over [buff, buff + size) for comm; with NCCL_WIN_COLL_SYMMETRIC buff must be aligned to
 * NCCL_WIN_REQUIRED_ALIGNMENT. Collectives on a window's buffer work as on any buffer. */
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
/** Ends a window of ncclCommWindowRegister. */
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
/** The buffer a window of comm was registered on. */
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);

/** A sum whose inputs are first multiplied by *scalar (of type datatype), valid on comm with that datatype. */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm);
/** Frees an op of ncclRedOpCreatePreMulSum. */
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/** root's recvbuff = op over every rank's sendbuff (count elements). */
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream);
/** In-place ncclBroadcast: buff = root's buff on every rank. */
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream);
/** recvbuff = root's sendbuff on every rank. */
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream);
/** recvbuff = op over every rank's sendbuff (count elements), on every rank. */
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                            ncclComm_t comm, cudaStream_t stream);
/** Rank r's recvbuff = block r (recvcount elements) of op over every rank's sendbuff. */
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
/** recvbuff = every rank's sendbuff (sendcount elements each) in rank order, on every rank. */
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream);
/** Block p (count elements) of sendbuff goes to rank p, which keeps it as block r of its recvbuff. */
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                          cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream);
/** root's recvbuff = every rank's sendbuff (count elements each) in rank order. */
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream);
/** Rank r's recvbuff = block r (count elements) of root's sendbuff. */
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream);

/** ncclAllReduce with the options of one call (ncclCollConfig_t; NULL: none); the other collectives' Config forms
 * below take it the same way. */
ncclResult_t ncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
/** ncclBroadcast with the options of one call (config may be NULL). */
ncclResult_t ncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                  ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
/** ncclReduce with the options of one call (config may be NULL). */
ncclResult_t ncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                              ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                              const ncclCollConfig_t* config);
ncclResult_t pncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                               ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                               const ncclCollConfig_t* config);
/** ncclAllGather with the options of one call (config may be NULL). */
ncclResult_t ncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                  ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
/** ncclReduceScatter with the options of one call (config may be NULL). */
ncclResult_t ncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                     const ncclCollConfig_t* config);
ncclResult_t pncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                      const ncclCollConfig_t* config);
/** ncclAlltoAll with the options of one call (config may be NULL). */
ncclResult_t ncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
/** ncclGather with the options of one call (config may be NULL). */
ncclResult_t ncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                               ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
/** ncclScatter with the options of one call (config may be NULL). */
ncclResult_t ncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                               ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config);

/** Sends count elements to peer, whose matching ncclRecv takes them; two ranks' messages match in order. */
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream);
/** Receives count elements from peer's matching ncclSend. */
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream);

/** One-sided operations on windows (2.29), on host memory, for a communicator made with ncclConfig_t.numRmaCtx >= 1
 *  (else ncclInvalidUsage): ncclPutSignal writes count elements into peer's window peerWin at byte peerWinOffset,
 *  then signals sigIdx of context ctx there; it returns once localbuff may be reused. ncclSignal signals alone;
 *  ncclWaitSignal waits for each descriptor's opCnt signals, which see the data of the puts before them. flags: 0. */
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin,
                           size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t pncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                            ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
                            ncclComm_t comm, cudaStream_t stream);
/** See ncclPutSignal. */
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream);
/** See ncclPutSignal. */
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm, cudaStream_t stream);

/** Starts a group: the calls up to ncclGroupEnd are queued (groups nest). */
ncclResult_t ncclGroupStart(void);
ncclResult_t pncclGroupStart(void);
/** Runs the group's calls, of all its communicators together, so matched Send/Recv pairs never deadlock. */
ncclResult_t ncclGroupEnd(void);
ncclResult_t pncclGroupEnd(void);
/** Not supported yet: returns ncclInvalidUsage and leaves the queued group untouched. */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

/** The settings by name (2.30.4): each key is an environment variable chorus reads (chorus-info lists them), its
 * value the one in effect. ncclParamBind binds a key; the getters convert its value, an error naming the key when
 * it does not fit the type. Strings and tables returned belong to chorus and stay valid until the thread's next
 * call of these functions. */
ncclResult_t ncclParamBind(ncclParamHandle_t* out, const char* key);
ncclResult_t pncclParamBind(ncclParamHandle_t* out, const char* key);
/** The value as int8_t. */
ncclResult_t ncclParamGetI8(ncclParamHandle_t handle, int8_t* out);
ncclResult_t pncclParamGetI8(ncclParamHandle_t handle, int8_t* out);
/** The value as int16_t. */
ncclResult_t ncclParamGetI16(ncclParamHandle_t handle, int16_t* out);
ncclResult_t pncclParamGetI16(ncclParamHandle_t handle, int16_t* out);
/** The value as int32_t. */
ncclResult_t ncclParamGetI32(ncclParamHandle_t handle, int32_t* out);
ncclResult_t pncclParamGetI32(ncclParamHandle_t handle, int32_t* out);
/** The value as int64_t. */
ncclResult_t ncclParamGetI64(ncclParamHandle_t handle, int64_t* out);
ncclResult_t pncclParamGetI64(ncclParamHandle_t handle, int64_t* out);
/** The value as uint8_t. */
ncclResult_t ncclParamGetU8(ncclParamHandle_t handle, uint8_t* out);
ncclResult_t pncclParamGetU8(ncclParamHandle_t handle, uint8_t* out);
/** The value as uint16_t. */
ncclResult_t ncclParamGetU16(ncclParamHandle_t handle, uint16_t* out);
ncclResult_t pncclParamGetU16(ncclParamHandle_t handle, uint16_t* out);
/** The value as uint32_t. */
ncclResult_t ncclParamGetU32(ncclParamHandle_t handle, uint32_t* out);
ncclResult_t pncclParamGetU32(ncclParamHandle_t handle, uint32_t* out);
/** The value as uint64_t. */
ncclResult_t ncclParamGetU64(ncclParamHandle_t handle, uint64_t* out);
ncclResult_t pncclParamGetU64(ncclParamHandle_t handle, uint64_t* out);
/** The value as text. */
ncclResult_t ncclParamGetStr(ncclParamHandle_t handle, const char** out);
ncclResult_t pncclParamGetStr(ncclParamHandle_t handle, const char** out);
/** The value as text into out (maxLen bytes, NUL included); *len: the bytes it needs. */
ncclResult_t ncclParamGet(ncclParamHandle_t handle, void* out, int maxLen, int* len);
ncclResult_t pncclParamGet(ncclParamHandle_t handle, void* out, int maxLen, int* len);
/** key's value as text and its length. */
ncclResult_t ncclParamGetParameter(const char* key, const char** value, int* valueLen);
ncclResult_t pncclParamGetParameter(const char* key, const char** value, int* valueLen);
/** Every key. */
ncclResult_t ncclParamGetAllParameterKeys(const char*** table, int* tableLen);
ncclResult_t pncclParamGetAllParameterKeys(const char*** table, int* tableLen);
/** Prints every key with its value to the log (INFO). */
void ncclParamDumpAll(void);
void pncclParamDumpAll(void);

/** chorus only. The chorus version of the loaded library ("0.2.0"); ncclGetVersion keeps returning the NCCL API
 * level. A program built against any nccl.h tells chorus from NVIDIA's NCCL at run time with
 * dlsym(RTLD_DEFAULT, "chorusGetVersion"), which is NULL under NVIDIA's library. */
const char* chorusGetVersion(void);
/** Defined by chorus's nccl.h only (as CHORUS_NCCL_COMPAT). */
#define CHORUS_NCCL 1

#ifdef __cplusplus
}
#endif

#endif /* NCCL_H_ */

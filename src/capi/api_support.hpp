// What every file of the NCCL C API shares: a chorus Status turned into an ncclResult_t (its message kept for
// ncclGetLastError and logged), no C++ exception across the API, the checks a call makes on its communicator on
// entry, and the conversion of datatypes and reduction ops.
#pragma once

#include <string>

#include "capi/nccl_comm.hpp"
#include "chorus/status.hpp"
#include "chorus/types.hpp"
#include "nccl.h"

namespace chorus::capi {

/// The ncclResult_t of a failed status, its message kept for ncclGetLastError and logged.
[[gnu::noinline]] ncclResult_t reportError(const Status& st);
/// ncclSuccess at once for an ok status; reportError() otherwise.
inline ncclResult_t report(const Status& st) { return st.isOk() ? ncclSuccess : reportError(st); }
/// The ncclResult_t of a status, nothing logged (a timed-out wait is ncclSystemError: NCCL returns ncclTimeout
/// from device-side waits only, and programs built on older headers know no such code).
ncclResult_t resultOf(const Status& st);
/// The message of the last error in this process (ncclGetLastError).
const char* lastError();

/// The error code of the exception being handled, reported with a message naming `fn` (CHORUS_CATCH).
ncclResult_t caught(const char* fn) noexcept;

/// Why `comm` is no live communicator (NULL, destroyed, not one at all); ok when it is.
Status checkShell(ncclComm_t comm, const char* fn);
/// Checks `comm` after the caller entered its gate (so the communicator cannot be freed under the call).
Status checkComm(ncclComm_t comm, bool entered, const char* fn);

/// ncclConfig_t as the caller passed it, read by its declared size (older, smaller structs and newer, larger ones
/// work: no byte past the size nor past this header's struct is read), its magic and values checked; the defaults
/// where `config` is NULL.
Status readConfig(const ncclConfig_t* config, ncclConfig_t* out);

/// A chorus communicator configuration of the C API's blocking mode.
CommConfig blockingConfig(bool blocking);
/// A new communicator's shell for rank `rank` of `nranks` by `id` (ncclCommInitRank and the calls like it, named by
/// `fn` in errors): ncclInProgress for a nonblocking one whose init goes on.
ncclResult_t initRank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, ncclConfig_t* config,
                      const char* fn = "ncclCommInitRank");

[[gnu::noinline]] Status typeError(ncclDataType_t t, const char* fn);
/// Inline with the status of a failure built out of line: the passing check is a compare on every call's path.
[[gnu::always_inline]] inline Status checkType(ncclDataType_t t, const char* fn) {
  if (static_cast<unsigned>(t) >= static_cast<unsigned>(ncclNumTypes)) return typeError(t, fn);
  return Status::ok();
}
inline DataType dt(ncclDataType_t t) { return static_cast<DataType>(t); }

/// A PreMulSum op made by ncclRedOpCreatePreMulSum, or an error naming a bad op.
[[gnu::noinline]] Status resolveCreatedOp(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t type, const char* fn,
                                          RedOp* out);
/// The chorus op of an NCCL op: a built-in one at once, a created one through resolveCreatedOp().
[[gnu::always_inline]] inline Status resolveOp(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t type, const char* fn,
                                               RedOp* out) {
  const int v = static_cast<int>(op);
  if (v >= 0 && v < ncclNumOps) {
    *out = RedOp{static_cast<RedOpKind>(v), 1.0};
    return Status::ok();
  }
  return resolveCreatedOp(comm, op, type, fn, out);
}

}  // namespace chorus::capi

/// Each C API function is `ncclResult_t pnccl<Name>(...) try { ... } CHORUS_CATCH("ncclName")`.
#define CHORUS_CATCH(fn)               \
  catch (...) {                        \
    return ::chorus::capi::caught(fn); \
  }

/// Enters `comm`'s gate for the rest of the function, or returns the error. `Call` is chorus::OwnerCall for the owner
/// thread's calls (collectives, point-to-point, finalize, split: a plain store, no fence) and chorus::SharedCall for
/// calls any thread may make at any time (a watchdog's status queries, op creation). The checks that pass are a load
/// and a compare each; the statuses naming a failure are built only then.
#define CHORUS_ENTER(Call, comm, fn)                                            \
  if (!comm || comm->magic.load(std::memory_order_relaxed) != ncclComm::kAlive) \
    return ::chorus::capi::report(::chorus::capi::checkShell(comm, fn));        \
  Call call_(comm->gate);                                                       \
  if (!call_.entered() || !comm->comm)                                          \
  return ::chorus::capi::report(::chorus::capi::checkComm(comm, call_.entered(), fn))
/// Owner calls that communicate also refuse a revoked or suspended communicator.
#define CHORUS_ENTER_OWNER(comm, fn)                                                                    \
  CHORUS_ENTER(chorus::OwnerCall, comm, fn);                                                            \
  if (comm->revoked.load(std::memory_order_acquire) || comm->suspended.load(std::memory_order_acquire)) \
  return ::chorus::capi::report(::chorus::capi::refusedState(comm, fn))
#define CHORUS_ENTER_MANAGEMENT(comm, fn) CHORUS_ENTER(chorus::OwnerCall, comm, fn)
#define CHORUS_ENTER_SHARED(comm, fn) CHORUS_ENTER(chorus::SharedCall, comm, fn)

/// Returns the error of a failed status.
#define CHORUS_CHECK(expr)                          \
  do {                                              \
    ncclResult_t r_ = ::chorus::capi::report(expr); \
    if (r_ != ncclSuccess) return r_;               \
  } while (0)

/// Exports pnccl<Name> a second time as a weak nccl<Name>, so profiling tools can interpose on nccl<Name>.
#define CHORUS_NCCL_ALIAS(name) decltype(p##name) name __attribute__((weak, alias("p" #name)));

namespace chorus::capi {
/// Why an owner call is refused on a revoked or suspended communicator.
[[gnu::noinline]] Status refusedState(ncclComm_t comm, const char* fn);
}  // namespace chorus::capi

// What an ncclComm_t points to: a chorus Communicator plus the C-API-only state (PreMulSum ops, windows, the finalize
// and revoke flags).
//
// The shell outlives its communicator: ncclCommAbort and ncclCommDestroy free the Communicator but keep the shell,
// marked dead, so a call that another thread makes with the handle afterwards is an error, never a use of freed
// memory (a shell is about 150 bytes). Calls hold the shell's gate; abort closes it and waits for them to leave.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "chorus/communicator.hpp"
#include "core/call_gate.hpp"
#include "nccl.h"

struct ncclComm {
  static constexpr unsigned kAlive = 0x63686f72, kDead = 0xdeadc0de;

  std::atomic<unsigned> magic{kAlive};
  chorus::CallGate gate;
  std::unique_ptr<chorus::Communicator> comm;
  bool finalized = false;
  bool blocking = true;
  std::atomic<bool> revoked{false};    // ncclCommRevoke returned: communication calls fail, shrink and destroy work
  std::atomic<bool> suspended{false};  // ncclCommSuspend returned and ncclCommResume not yet: calls fail
  bool growIdOutstanding = false;      // ncclCommGetUniqueId made an id no ncclCommGrow has used yet
  uint64_t suspendedBytes = 0;         // what ncclCommSuspend(NCCL_SUSPEND_MEM) released, until ncclCommResume
  int cudaDevice = -1;                 // the caller's CUDA device at init (ncclCommCuDevice), -1 without one

  /// A PreMulSum op: the scalar, where it lives, and the datatype it was made for.
  struct PreMulOp {
    bool inUse = false;
    ncclDataType_t datatype = ncclFloat32;
    ncclScalarResidence_t residence = ncclScalarHostImmediate;
    double immediate = 1.0;         // read at creation (host immediate)
    const void* pointer = nullptr;  // read at each call (ncclScalarDevice; on host memory a plain pointer)
  };
  std::vector<PreMulOp> preMulOps;  // ncclRedOp_t value = ncclNumOps + index
  std::vector<std::unique_ptr<ncclWindow_vidmem>> windows;
  uint64_t windowsRegistered = 0;  // the next window's id: windows are registered collectively, so ids agree
  std::mutex mutex;                // guards preMulOps, windows and windowsRegistered
};

/// What an ncclWindow_t points to. The host path reads buffers wherever they are, so a window records its range;
/// it is the handle NCCL's programs pass around, give to the one-sided calls and back to ncclCommWindowDeregister.
struct ncclWindow_vidmem {
  uint64_t id = 0;  // its place in the communicator's registrations: what a put names to the peer
  void* base = nullptr;
  size_t size = 0;
  int flags = NCCL_WIN_DEFAULT;
};

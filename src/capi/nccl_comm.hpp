// What an ncclComm_t points to: a chorus Communicator plus the C-API-only state (PreMulSum ops, finalize flag).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "chorus/communicator.hpp"
#include "nccl.h"

struct ncclComm {
  static constexpr unsigned kAlive = 0x63686f72, kDead = 0xdeadc0de;

  unsigned magic = kAlive;
  std::unique_ptr<chorus::Communicator> comm;
  bool finalized = false;
  bool blocking = true;

  /// A PreMulSum op: the scalar, where it lives, and the datatype it was made for.
  struct PreMulOp {
    bool inUse = false;
    ncclDataType_t datatype = ncclFloat32;
    ncclScalarResidence_t residence = ncclScalarHostImmediate;
    double immediate = 1.0;         // read at creation (host immediate)
    const void* pointer = nullptr;  // read at each call (ncclScalarDevice; on host memory a plain pointer)
  };
  std::vector<PreMulOp> preMulOps;  // ncclRedOp_t value = ncclNumOps + index
  std::mutex mutex;
};

namespace chorus::capi {

/// Reads one element of `datatype` at `p` as a double (PreMulSum scalars).
double scalarValue(const void* p, ncclDataType_t datatype);

}  // namespace chorus::capi

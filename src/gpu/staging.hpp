// How a call on device buffers runs through pinned host memory: which device bytes go to the staging buffer before
// the call, where each operation's buffers sit in it, and which bytes go back after. Pure arithmetic on addresses,
// so the host tests check it; stream_calls_cuda.cc issues the copies.
//
// Buffers that overlap on the device (an in-place call, a group whose operations share a buffer) share one region of
// the staging buffer, so the host operations alias exactly as the device ones do.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/operation.hpp"

namespace chorus::gpu {

/// One copy between a device range and the staging buffer.
struct StagedCopy {
  size_t offset = 0;  // in the staging buffer
  const void* device = nullptr;
  size_t bytes = 0;
};

struct StagingPlan {
  size_t bytes = 0;              // the staging buffer's size
  std::vector<StagedCopy> in;    // device -> staging, before the call: what the call reads
  std::vector<StagedCopy> out;   // staging -> device, after it: what the call writes
  std::vector<Operation> ops;    // the operations on staging memory, once rebase() gave them its address
  std::vector<size_t> sendAt;    // per operation: the offset of its send buffer (unused without one)
  std::vector<size_t> recvAt;    // the same for its receive buffer
  std::vector<size_t> scalarAt;  // the same for its PreMulSum scalar on the device (RedOp::scalarOnDevice)

  /// The operations with their buffers at `staging` + their offsets (and off the device).
  std::vector<Operation> rebase(std::byte* staging) const;
};

/// Once the staged inputs arrived: each staged operation's PreMulSum scalar, read from the staging buffer.
void readStagedScalars(std::vector<Operation>* ops);

/// The staging plan of `ops` (one call, or one communicator's operations of a group) for `rank` of `nranks`.
StagingPlan planStaging(const std::vector<Operation>& ops, int rank, int nranks);

}  // namespace chorus::gpu

#include "gpu/staging.hpp"

#include <algorithm>
#include <cstdint>

#include "kernels/element_value.hpp"

namespace chorus::gpu {
namespace {

// Regions of the staging buffer start on cache-line boundaries, as the engine's own buffers do.
constexpr size_t kAlign = 64;

struct Range {
  uintptr_t begin = 0, end = 0;
};

}  // namespace

StagingPlan planStaging(const std::vector<Operation>& ops, int rank, int nranks) {
  StagingPlan plan;
  std::vector<BufferExtents> extents;
  std::vector<Range> ranges;
  for (const Operation& op : ops) {
    BufferExtents x = bufferExtents(op, rank, nranks);
    extents.push_back(x);
    if (x.sendBytes)
      ranges.push_back({reinterpret_cast<uintptr_t>(op.send), reinterpret_cast<uintptr_t>(op.send) + x.sendBytes});
    if (x.recvBytes)
      ranges.push_back({reinterpret_cast<uintptr_t>(op.recv), reinterpret_cast<uintptr_t>(op.recv) + x.recvBytes});
  }
  // Overlapping device ranges merge into one region, placed once in the staging buffer.
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  std::vector<Range> regions;
  for (const Range& r : ranges) {
    if (!regions.empty() && r.begin < regions.back().end) {
      regions.back().end = std::max(regions.back().end, r.end);
    } else {
      regions.push_back(r);
    }
  }
  std::vector<size_t> regionAt;
  for (const Range& r : regions) {
    regionAt.push_back(plan.bytes);
    plan.bytes += (r.end - r.begin + kAlign - 1) / kAlign * kAlign;
  }
  auto offsetOf = [&](const void* p) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    size_t i =
        std::upper_bound(regions.begin(), regions.end(), a, [](uintptr_t v, const Range& r) { return v < r.begin; }) -
        regions.begin() - 1;
    return regionAt[i] + (a - regions[i].begin);
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = ops[i];
    const BufferExtents& x = extents[i];
    plan.sendAt.push_back(x.sendBytes ? offsetOf(op.send) : 0);
    plan.recvAt.push_back(x.recvBytes ? offsetOf(op.recv) : 0);
    if (x.sendBytes) plan.in.push_back({plan.sendAt[i], op.send, x.sendBytes});
    // The bytes the call leaves alone must go back as they were, so a receive buffer with gaps is read first.
    if (x.recvBytes && !x.recvFullyWritten) plan.in.push_back({plan.recvAt[i], op.recv, x.recvBytes});
    if (x.recvBytes) plan.out.push_back({plan.recvAt[i], op.recv, x.recvBytes});
  }
  for (const Operation& op : ops) {
    plan.scalarAt.push_back(plan.bytes);
    if (op.op.scalarOnDevice) {
      plan.in.push_back({plan.bytes, op.op.scalarOnDevice, dataTypeSize(op.dtype)});
      plan.bytes += kAlign;
    }
  }
  plan.ops = ops;
  return plan;
}

std::vector<Operation> StagingPlan::rebase(std::byte* staging) const {
  std::vector<Operation> staged = ops;
  for (size_t i = 0; i < staged.size(); ++i) {
    Operation& op = staged[i];
    if (op.send) op.send = staging + sendAt[i];
    if (op.recv) op.recv = staging + recvAt[i];
    if (op.op.scalarOnDevice) op.op.scalarOnDevice = staging + scalarAt[i];
    op.onDevice = false;
    op.stream = nullptr;
  }
  return staged;
}

void readStagedScalars(std::vector<Operation>* ops) {
  for (Operation& op : *ops) {
    if (!op.op.scalarOnDevice) continue;
    op.op.scalar = kernels::elementAsDouble(op.op.scalarOnDevice, op.dtype);
    op.op.scalarOnDevice = nullptr;
  }
}

}  // namespace chorus::gpu

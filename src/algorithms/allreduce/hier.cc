// Hierarchical AllReduce for several hosts with the same number of ranks: a ring reduce-scatter inside each host
// (local rank i ends with slice i summed over its host), then for every i an AllReduce of slice i among the ranks
// at local position i of all hosts (all in parallel: each host's links to the network carry 1/L of the data per
// rank instead of a flat ring's whole buffer over the slowest hop), then a ring all-gather inside each host.
#include "algorithms/cost.hpp"
#include "algorithms/hosts.hpp"
#include "algorithms/ring_steps.hpp"

namespace chorus::algo {
namespace {

Plan hierAllReduce(const CollShape& s) {
  Plan p;
  HostGroups g;
  hostGroupsOf(s, &g);
  const size_t e = s.elemSize;
  const int L = static_cast<int>(g.local.size()), H = static_cast<int>(g.cross.size());
  auto localSlice = [&](int j) {
    const size_t b = sliceBegin(s.count, L, j), end = sliceBegin(s.count, L, j + 1);
    return ByteRange{b * e, (end - b) * e};
  };
  // 1. Inside the host: this rank ends with its slice summed over the host, in recv.
  const int hostSum =
      addFence(p, addRingReduceScatter(p, g.local, g.localIndex, localSlice, BufferKind::kSend, BufferKind::kRecv, -1));
  // 2. Across hosts, on this rank's slice only: reduce-scatter then all-gather in place.
  const ByteRange mine = localSlice(g.localIndex);
  const size_t first = mine.offset / e, count = mine.bytes / e;
  auto crossSlice = [&](int j) {
    const size_t b = sliceBegin(count, H, j), end = sliceBegin(count, H, j + 1);
    return ByteRange{(first + b) * e, (end - b) * e};
  };
  const int part =
      addFence(p, addRingReduceScatter(p, g.cross, g.host, crossSlice, BufferKind::kRecv, BufferKind::kRecv, hostSum));
  const std::vector<int> parts = addRingAllGather(p, g.cross, g.host, crossSlice, BufferKind::kRecv, part);
  // The cross all-gather receives from one peer in order: its last receive finishing means all did.
  const int total = addFence(p, H > 1 ? parts[mod(g.host + 1, H)] : part);
  // 3. Inside the host again: every rank gathers the other slices.
  addRingAllGather(p, g.local, g.localIndex, localSlice, BufferKind::kRecv, total);
  return p;
}

// Local ring reduce-scatter and all-gather of 1/L slices, and between them a ring AllReduce of 1/(L H) pieces
// that all L ranks of a host run at once over the host's link.
double hierCost(const CollShape& s, const CostModel& m) {
  const HostRings h = hostRingsOf(s);
  const size_t bytes = s.count * s.elemSize, slice = bytes / static_cast<size_t>(h.perHost);
  const size_t piece = slice / static_cast<size_t>(h.hosts);
  auto local = [&](int r) { return h.localNext[r]; };
  auto cross = [&](int r) { return h.crossNext[r]; };
  return 2.0 * (h.perHost - 1) * m.round(local, slice) + 2.0 * (h.hosts - 1) * m.round(cross, piece) + m.reduce(bytes);
}

}  // namespace

CHORUS_REGISTER_ALGORITHM_IF(allreduce_hier, "hier", CollType::kAllReduce, hierAllReduce, hierCost,
                             hierarchicalApplies);

}  // namespace chorus::algo

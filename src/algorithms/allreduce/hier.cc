// Hierarchical AllReduce for several hosts with the same number of ranks: a ring reduce-scatter inside each host
// (local rank i ends with slice i summed over its host), then for every i an AllReduce of slice i among the ranks
// at local position i of all hosts (all in parallel: each host's links to the network carry 1/L of the data per
// rank instead of a flat ring's whole buffer over the slowest hop), then a ring all-gather inside each host.
//
// Large buffers go through in pieces, so that the three phases overlap: while piece c crosses the network, piece
// c+1 is reduced inside the host and piece c-1 gathered, and the network link (the bottleneck) never waits for
// shared memory. Each phase lists the steps of every piece in order, so a peer's stream carries the pieces in the
// same order on both sides.
#include <algorithm>

#include "algorithms/cost.hpp"
#include "algorithms/hosts.hpp"
#include "algorithms/ring_steps.hpp"

namespace chorus::algo {
namespace {

// Pieces of at least this many bytes: smaller ones would add rounds (α) faster than they hide copies.
constexpr size_t kMinPieceBytes = 1 << 20;
constexpr int kMaxPieces = 8;

int piecesOf(const CollShape& s) {
  const size_t bytes = s.count * s.elemSize;
  return static_cast<int>(std::clamp<size_t>(bytes / kMinPieceBytes, 1, kMaxPieces));
}

Plan hierAllReduce(const CollShape& s) {
  Plan p;
  HostGroups g;
  hostGroupsOf(s, &g);
  const size_t e = s.elemSize;
  const int L = static_cast<int>(g.local.size()), H = static_cast<int>(g.cross.size()), K = piecesOf(s);
  // Slice j (of L) of piece c (of K), in elements.
  auto localSliceOf = [&](int c) {
    const size_t first = sliceBegin(s.count, K, c), count = sliceBegin(s.count, K, c + 1) - first;
    return [=](int j) {
      const size_t b = sliceBegin(count, L, j), end = sliceBegin(count, L, j + 1);
      return ByteRange{(first + b) * e, (end - b) * e};
    };
  };
  // 1. Inside the host: this rank ends with its slice of every piece summed over the host, in recv.
  std::vector<int> hostSum(K), total(K);
  for (int c = 0; c < K; ++c)
    hostSum[c] = addFence(
        p, addRingReduceScatter(p, g.local, g.localIndex, localSliceOf(c), BufferKind::kSend, BufferKind::kRecv, -1));
  // 2. Across hosts, on this rank's slice of each piece: reduce-scatter then all-gather in place.
  for (int c = 0; c < K; ++c) {
    const ByteRange mine = localSliceOf(c)(g.localIndex);
    const size_t first = mine.offset / e, count = mine.bytes / e;
    auto crossSlice = [&](int j) {
      const size_t b = sliceBegin(count, H, j), end = sliceBegin(count, H, j + 1);
      return ByteRange{(first + b) * e, (end - b) * e};
    };
    const int part = addFence(
        p, addRingReduceScatter(p, g.cross, g.host, crossSlice, BufferKind::kRecv, BufferKind::kRecv, hostSum[c]));
    const std::vector<int> parts = addRingAllGather(p, g.cross, g.host, crossSlice, BufferKind::kRecv, part);
    // The cross all-gather receives from one peer in order: its last receive finishing means all did.
    total[c] = addFence(p, H > 1 ? parts[mod(g.host + 1, H)] : part);
  }
  // 3. Inside the host again: every rank gathers the other slices of each piece.
  for (int c = 0; c < K; ++c) addRingAllGather(p, g.local, g.localIndex, localSliceOf(c), BufferKind::kRecv, total[c]);
  return p;
}

// Per piece: local ring reduce-scatter and all-gather of 1/L slices, and between them a ring AllReduce of 1/(L H)
// parts that all L ranks of a host run at once over the host's link. The pieces pipeline: the first one goes
// through every phase, each later one adds the slowest phase.
double hierCost(const CollShape& s, const CostModel& m) {
  const HostRings h = hostRingsOf(s);
  const int K = piecesOf(s);
  const size_t bytes = s.count * s.elemSize / static_cast<size_t>(K), slice = bytes / static_cast<size_t>(h.perHost);
  const size_t part = slice / static_cast<size_t>(h.hosts);
  auto local = [&](int r) { return h.localNext[r]; };
  auto cross = [&](int r) { return h.crossNext[r]; };
  const double gather = (h.perHost - 1) * m.round(local, slice);
  const double reduce = gather + m.reduce(bytes);
  const double network = 2.0 * (h.hosts - 1) * m.round(cross, part);
  return reduce + network + gather + (K - 1) * std::max({reduce, network, gather});
}

}  // namespace

CHORUS_REGISTER_ALGORITHM_IF(allreduce_hier, "hier", CollType::kAllReduce, hierAllReduce, hierCost,
                             hierarchicalApplies);

}  // namespace chorus::algo

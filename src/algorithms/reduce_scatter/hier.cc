// Hierarchical ReduceScatter for several hosts with the same number of ranks: inside each host, one ring
// reduce-scatter per host h' over the blocks of h's ranks (local rank i ends with the host's sum of the block of
// rank i of every host), then among the ranks at local position i of all hosts a ring reduce-scatter of those
// blocks. Only 1/L of the data crosses the network per rank.
#include "algorithms/cost.hpp"
#include "algorithms/hosts.hpp"
#include "algorithms/ring_steps.hpp"

namespace chorus::algo {
namespace {

Plan hierReduceScatter(const CollShape& s) {
  Plan p;
  HostGroups g;
  hostGroupsOf(s, &g);
  const size_t block = s.count * s.elemSize;  // count = recvcount
  const int H = static_cast<int>(g.cross.size());
  p.scratchBytes = block * static_cast<size_t>(s.nranks);
  auto blockOf = [&](int rank) { return rankBlock(rank, block); };
  // 1. One ring per host h' inside this host, all on the same peers (their steps queue in order).
  int hostSums = -1;
  for (int h = 0; h < H; ++h) {
    const std::vector<int>& ranks = g.ranksOfHost[h];
    hostSums = addRingReduceScatter(
        p, g.local, g.localIndex, [&](int j) { return blockOf(ranks[j]); }, BufferKind::kSend, BufferKind::kScratch,
        -1);
  }
  // The rings receive from one peer in order: the last ring's result finishing means all did.
  const int ready = addFence(p, hostSums);
  // 2. Across hosts: this rank ends with its own block summed over every rank.
  const int mine = addRingReduceScatter(
      p, g.cross, g.host, [&](int j) { return blockOf(g.cross[j]); }, BufferKind::kScratch, BufferKind::kScratch,
      ready);
  p.add({StepKind::kCopy, -1, {BufferKind::kScratch, blockOf(s.rank).offset}, {BufferKind::kRecv, 0}, block, mine});
  return p;
}

// H local rings of L-1 steps of one block, then a ring of H-1 steps across hosts that the L ranks of a host run
// at once over its link.
double hierCost(const CollShape& s, const CostModel& m) {
  const HostRings h = hostRingsOf(s);
  const size_t block = s.count * s.elemSize;
  auto local = [&](int r) { return h.localNext[r]; };
  auto cross = [&](int r) { return h.crossNext[r]; };
  return 1.0 * h.hosts * (h.perHost - 1) * m.round(local, block) + (h.hosts - 1) * m.round(cross, block) +
         m.reduce(block * static_cast<size_t>(s.nranks));
}

}  // namespace

CHORUS_REGISTER_ALGORITHM_IF(reduce_scatter_hier, "hier", CollType::kReduceScatter, hierReduceScatter, hierCost,
                             hierarchicalApplies);

}  // namespace chorus::algo

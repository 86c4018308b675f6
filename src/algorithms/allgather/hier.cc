// Hierarchical AllGather for several hosts with the same number of ranks: among the ranks at local position i of
// all hosts a ring all-gather of their blocks, then inside each host one ring all-gather per host h' of the
// blocks of h's ranks. Each block crosses the network once per host instead of once per rank.
#include "algorithms/cost.hpp"
#include "algorithms/hosts.hpp"
#include "algorithms/ring_steps.hpp"

namespace chorus::algo {
namespace {

Plan hierAllGather(const CollShape& s) {
  Plan p;
  HostGroups g;
  hostGroupsOf(s, &g);
  const size_t block = s.count * s.elemSize;  // count = sendcount
  const int H = static_cast<int>(g.cross.size());
  auto blockOf = [&](int rank) { return rankBlock(rank, block); };
  // In place (send == recv + rank*block) this copy is a self-copy, which the engine skips.
  const int own =
      p.add({StepKind::kCopy, -1, {BufferKind::kSend, 0}, {BufferKind::kRecv, blockOf(s.rank).offset}, block});
  // 1. Across hosts: the blocks of the ranks at this local position.
  const std::vector<int> crossBlocks = addRingAllGather(
      p, g.cross, g.host, [&](int j) { return blockOf(g.cross[j]); }, BufferKind::kRecv, own);
  // 2. Inside the host, per host h': this rank holds the block of h's rank at its own local position.
  for (int h = 0; h < H; ++h) {
    const std::vector<int>& ranks = g.ranksOfHost[h];
    addRingAllGather(
        p, g.local, g.localIndex, [&](int j) { return blockOf(ranks[j]); }, BufferKind::kRecv, crossBlocks[h]);
  }
  return p;
}

// A ring of H-1 steps across hosts that the L ranks of a host run at once, then H local rings of L-1 steps.
double hierCost(const CollShape& s, const CostModel& m) {
  const HostRings h = hostRingsOf(s);
  const size_t block = s.count * s.elemSize;
  auto local = [&](int r) { return h.localNext[r]; };
  auto cross = [&](int r) { return h.crossNext[r]; };
  return 1.0 * h.hosts * (h.perHost - 1) * m.round(local, block) + (h.hosts - 1) * m.round(cross, block);
}

}  // namespace

CHORUS_REGISTER_ALGORITHM_IF(allgather_hier, "hier", CollType::kAllGather, hierAllGather, hierCost,
                             hierarchicalApplies);

}  // namespace chorus::algo

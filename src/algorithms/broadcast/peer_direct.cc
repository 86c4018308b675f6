// Broadcast over peer memory: the root puts its buffer into its slot (and its result), and after a barrier every
// other rank copies it from the root's slot.
#include "algorithms/peer_plan.hpp"

namespace chorus::algo::peer {
namespace {

Plan direct(const CollShape& s) {
  if (s.nranks == 1) return singleRank(s);
  const size_t e = s.elemSize;
  return chunked(s.count, rowElements(s.peer.slotBytes, 1, e), 2, [&](Step& step, size_t first, size_t k) {
    if (s.rank == s.root) {
      step.phases[0].moves.push_back({sendAt(first * e), slotOf(s.rank, 0), k * e});
      if (!s.peer.inPlace) step.phases[0].moves.push_back({sendAt(first * e), recvAt(first * e), k * e});
    } else {
      step.phases[1].moves.push_back({slotOf(s.root, 0), recvAt(first * e), k * e});
    }
  });
}

double cost(const CollShape& s, const CostModel& m) { return costOfRankZero(direct, s, m); }

}  // namespace

CHORUS_REGISTER_PEER_ALGORITHM(broadcast_peer_direct, "peer_direct", CollType::kBroadcast, direct, cost, nullptr);

}  // namespace chorus::algo::peer

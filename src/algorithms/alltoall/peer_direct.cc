// AlltoAll over peer memory: each rank puts the block for each peer into that peer's row of its slot (its own goes
// straight to its result), and after a barrier copies its row of every other rank's slot.
#include "algorithms/peer_plan.hpp"

namespace chorus::algo::peer {
namespace {

Plan direct(const CollShape& s) {
  if (s.nranks == 1) return singleRank(s);
  const size_t e = s.elemSize, c = s.count;
  const int r = s.rank;
  const size_t m = rowElements(s.peer.slotBytes, s.nranks, e);
  return chunked(c, m, 2, [&](Step& step, size_t first, size_t k) {
    for (int q = 0; q < s.nranks; ++q) {
      const Ref to = q == r ? recvAt((r * c + first) * e) : slotOf(r, q * m * e);
      step.phases[0].moves.push_back({sendAt((q * c + first) * e), to, k * e});
      if (q != r) step.phases[1].moves.push_back({slotOf(q, r * m * e), recvAt((q * c + first) * e), k * e});
    }
  });
}

double cost(const CollShape& s, const CostModel& m) { return costOfRankZero(direct, s, m); }

}  // namespace

CHORUS_REGISTER_PEER_ALGORITHM(alltoall_peer_direct, "peer_direct", CollType::kAlltoAll, direct, cost, nullptr);

}  // namespace chorus::algo::peer

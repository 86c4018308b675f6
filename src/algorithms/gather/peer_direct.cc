// Gather over peer memory: each rank but the root puts its block into its slot, and after a barrier the root copies
// every other rank's block from that rank's slot.
#include "algorithms/peer_plan.hpp"

namespace chorus::algo::peer {
namespace {

Plan direct(const CollShape& s) {
  if (s.nranks == 1) return singleRank(s);
  const size_t e = s.elemSize, c = s.count;
  const int r = s.rank;
  return chunked(c, rowElements(s.peer.slotBytes, 1, e), 2, [&](Step& step, size_t first, size_t k) {
    if (r != s.root) {
      step.phases[0].moves.push_back({sendAt(first * e), slotOf(r, 0), k * e});
      return;
    }
    if (!s.peer.inPlace) step.phases[0].moves.push_back({sendAt(first * e), recvAt((r * c + first) * e), k * e});
    for (int q = 0; q < s.nranks; ++q)
      if (q != r) step.phases[1].moves.push_back({slotOf(q, 0), recvAt((q * c + first) * e), k * e});
  });
}

double cost(const CollShape& s, const CostModel& m) { return costOfRankZero(direct, s, m); }

}  // namespace

CHORUS_REGISTER_PEER_ALGORITHM(gather_peer_direct, "peer_direct", CollType::kGather, direct, cost, nullptr);

}  // namespace chorus::algo::peer

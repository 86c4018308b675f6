// Scatter over peer memory: the root puts each other rank's block into that rank's row of its slot (its own goes
// straight to its result), and after a barrier every other rank copies its row from the root's slot.
#include "algorithms/peer_plan.hpp"

namespace chorus::algo::peer {
namespace {

Plan direct(const CollShape& s) {
  if (s.nranks == 1) return singleRank(s);
  const size_t e = s.elemSize, c = s.count;
  const int r = s.rank;
  const size_t m = rowElements(s.peer.slotBytes, s.nranks, e);
  return chunked(c, m, 2, [&](Step& step, size_t first, size_t k) {
    if (r != s.root) {
      step.phases[1].moves.push_back({slotOf(s.root, r * m * e), recvAt(first * e), k * e});
      return;
    }
    for (int q = 0; q < s.nranks; ++q)
      if (q != r) step.phases[0].moves.push_back({sendAt((q * c + first) * e), slotOf(r, q * m * e), k * e});
    if (!s.peer.inPlace) step.phases[0].moves.push_back({sendAt((r * c + first) * e), recvAt(first * e), k * e});
  });
}

double cost(const CollShape& s, const CostModel& m) { return costOfRankZero(direct, s, m); }

}  // namespace

CHORUS_REGISTER_PEER_ALGORITHM(scatter_peer_direct, "peer_direct", CollType::kScatter, direct, cost, nullptr);

}  // namespace chorus::algo::peer

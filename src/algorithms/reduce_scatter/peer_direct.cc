// ReduceScatter over peer memory: each rank puts every rank's block of its input into a row of its slot, and after
// a barrier reduces its own row of every rank's slot into its result.
#include "algorithms/peer_plan.hpp"

namespace chorus::algo::peer {
namespace {

Plan direct(const CollShape& s) {
  if (s.nranks == 1) return singleRank(s);
  const size_t e = s.elemSize, c = s.count;
  const size_t m = rowElements(s.peer.slotBytes, s.nranks, e);
  return chunked(c, m, 2, [&](Step& step, size_t first, size_t k) {
    for (int q = 0; q < s.nranks; ++q)
      step.phases[0].moves.push_back({sendAt((q * c + first) * e), slotOf(s.rank, q * m * e), k * e, s.peer.scaled});
    step.phases[1].combines.push_back({s.rank * m * e, k, {recvAt(first * e)}});
  });
}

double cost(const CollShape& s, const CostModel& m) { return costOfRankZero(direct, s, m); }

}  // namespace

CHORUS_REGISTER_PEER_ALGORITHM(reduce_scatter_peer_direct, "peer_direct", CollType::kReduceScatter, direct, cost,
                               nullptr);

}  // namespace chorus::algo::peer

// Reduce over peer memory: each rank puts its input into its slot, and after a barrier the root reduces every
// rank's slot into its result.
#include "algorithms/peer_plan.hpp"

namespace chorus::algo::peer {
namespace {

Plan direct(const CollShape& s) {
  if (s.nranks == 1) return singleRank(s);
  const size_t e = s.elemSize;
  return chunked(s.count, rowElements(s.peer.slotBytes, 1, e), 2, [&](Step& step, size_t first, size_t k) {
    step.phases[0].moves.push_back({sendAt(first * e), slotOf(s.rank, 0), k * e, s.peer.scaled});
    if (s.rank == s.root) step.phases[1].combines.push_back({0, k, {recvAt(first * e)}});
  });
}

double cost(const CollShape& s, const CostModel& m) { return costOfRankZero(direct, s, m); }

}  // namespace

CHORUS_REGISTER_PEER_ALGORITHM(reduce_peer_direct, "peer_direct", CollType::kReduce, direct, cost, nullptr);

}  // namespace chorus::algo::peer

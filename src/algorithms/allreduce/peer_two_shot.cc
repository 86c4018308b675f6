// Two-shot AllReduce over peer memory: each rank puts its input into its slot; after a barrier it reduces its share
// of every rank's slot into its result and back into its slot; after a second barrier it copies the other ranks'
// reduced shares from their slots. Each rank reads about twice its buffer, whatever the number of ranks.
#include "algorithms/peer_plan.hpp"

namespace chorus::algo::peer {
namespace {

Plan twoShot(const CollShape& s) {
  if (s.nranks == 1) return singleRank(s);
  const size_t e = s.elemSize;
  const int r = s.rank, n = s.nranks;
  return chunked(s.count, rowElements(s.peer.slotBytes, 1, e), 3, [&](Step& step, size_t first, size_t k) {
    step.phases[0].moves.push_back({sendAt(first * e), slotOf(r, 0), k * e, s.peer.scaled});
    const size_t lo = shareStart(r, n, k, e), hi = shareStart(r + 1, n, k, e);
    if (hi > lo) step.phases[1].combines.push_back({lo * e, hi - lo, {recvAt((first + lo) * e), slotOf(r, lo * e)}});
    for (int q = 0; q < n; ++q) {
      const size_t qlo = shareStart(q, n, k, e), qhi = shareStart(q + 1, n, k, e);
      if (q != r && qhi > qlo)
        step.phases[2].moves.push_back({slotOf(q, qlo * e), recvAt((first + qlo) * e), (qhi - qlo) * e});
    }
  });
}

double cost(const CollShape& s, const CostModel& m) { return costOfRankZero(twoShot, s, m); }

}  // namespace

CHORUS_REGISTER_PEER_ALGORITHM(allreduce_peer_two_shot, "peer_two_shot", CollType::kAllReduce, twoShot, cost, nullptr);

}  // namespace chorus::algo::peer

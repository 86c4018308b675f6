// One-shot AllReduce over peer memory: each rank puts its input into its slot, and after one barrier reduces every
// rank's slot into its whole result. One barrier a step, at the price of every rank reading every rank's input.
#include "algorithms/peer_plan.hpp"

namespace chorus::algo::peer {
namespace {

Plan oneShot(const CollShape& s) {
  if (s.nranks == 1) return singleRank(s);
  const size_t e = s.elemSize;
  return chunked(s.count, rowElements(s.peer.slotBytes, 1, e), 2, [&](Step& step, size_t first, size_t k) {
    step.phases[0].moves.push_back({sendAt(first * e), slotOf(s.rank, 0), k * e, s.peer.scaled});
    step.phases[1].combines.push_back({0, k, {recvAt(first * e)}});
  });
}

double cost(const CollShape& s, const CostModel& m) { return costOfRankZero(oneShot, s, m); }

// Up to CHORUS_GPU_ONE_SHOT: above it the reads of every rank's whole buffer cost more than the model's terms show
// (one-shot beat two-shot up to 4 MiB at 2 processes on an H200, and costs more per byte as ranks are added:
// docs/gpu.md, "The defaults came from the sweep").
bool fits(const CollShape& s) { return s.count * s.elemSize <= s.peer.oneShotBytes; }

}  // namespace

CHORUS_REGISTER_PEER_ALGORITHM(allreduce_peer_one_shot, "peer_one_shot", CollType::kAllReduce, oneShot, cost, fits);

}  // namespace chorus::algo::peer

// One-shot AllReduce for small messages: every rank sends its whole input to every peer in one round and folds
// the n inputs itself, in rank order (so every rank computes the same bits). One latency instead of the ring's
// 2(n-1), at the price of (n-1) times the data per rank.
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan oneShotAllReduce(const CollShape& s) {
  Plan p;
  const int n = s.nranks, r = s.rank;
  const size_t bytes = s.count * s.elemSize;
  if (n == 1) {
    addInputCopy(p, bytes);
    return p;
  }
  // The input goes to scratch first: in place, the result overwrites it while peers may still be reading.
  p.scratchBytes = bytes;
  const int own = p.add({StepKind::kCopy, -1, {BufferKind::kSend, 0}, {BufferKind::kScratch, 0}, bytes});
  for (int k = 1; k < n; ++k) p.add({StepKind::kSend, (r + k) % n, {BufferKind::kScratch, 0}, {}, bytes, own});
  addRankOrderFold(p, n, r, {BufferKind::kScratch, 0}, {BufferKind::kRecv, 0}, bytes, own);
  return p;
}

// One round in which every rank sends everything to every peer, then n-1 local reductions.
double oneShotCost(const CollShape& s, const CostModel& m) {
  const size_t bytes = s.count * s.elemSize;
  return m.allPairs(bytes) + m.reduce(bytes * static_cast<size_t>(s.nranks - 1));
}

}  // namespace

CHORUS_REGISTER_RANK_ORDER_ALGORITHM(allreduce_one_shot, "one_shot", CollType::kAllReduce, oneShotAllReduce,
                                     oneShotCost);

}  // namespace chorus::algo

// Direct ReduceScatter: every rank sends block j of its input straight to rank j and folds the n copies of its
// own block in rank order (so the bits do not depend on arrival order). One round instead of the ring's n-1, for
// the same bytes per rank: the choice when ranks outnumber cores.
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan directReduceScatter(const CollShape& s) {
  Plan p;
  const int n = s.nranks, r = s.rank;
  const size_t bytes = s.count * s.elemSize;  // count = recvcount
  auto off = [&](int block) { return static_cast<size_t>(block) * bytes; };
  if (n == 1) {
    addInputCopy(p, bytes);
    return p;
  }
  // Own block to scratch first: in place, the result overwrites it before this rank's turn in the fold.
  p.scratchBytes = bytes;
  const Slice mine{BufferKind::kScratch, 0}, result{BufferKind::kRecv, 0};
  const int own = p.add({StepKind::kCopy, -1, {BufferKind::kSend, off(r)}, mine, bytes});
  for (int k = 1; k < n; ++k) {
    const int to = mod(r + k, n);
    p.add({StepKind::kSend, to, {BufferKind::kSend, off(to)}, {}, bytes});
  }
  addRankOrderFold(p, n, r, mine, result, bytes, own);
  return p;
}

// One round in which every rank sends each peer its block.
double directCost(const CollShape& s, const CostModel& m) {
  const size_t block = s.count * s.elemSize;
  return m.allPairs(block) + m.reduce(block * static_cast<size_t>(s.nranks - 1));
}

}  // namespace

CHORUS_REGISTER_RANK_ORDER_ALGORITHM(reduce_scatter_direct, "direct", CollType::kReduceScatter, directReduceScatter,
                                     directCost);

}  // namespace chorus::algo

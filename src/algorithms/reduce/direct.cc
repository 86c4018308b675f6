// Direct Reduce: every rank sends its buffer to the root, which folds them in rank order. One round; the root
// receives n-1 buffers. Deterministic mode's Reduce, whose bits equal an AllReduce's in that mode.
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan directReduce(const CollShape& s) {
  Plan p;
  const size_t bytes = s.count * s.elemSize;
  if (s.nranks == 1) {
    addInputCopy(p, bytes);
  } else if (s.rank != s.root) {
    p.add({StepKind::kSend, s.root, {BufferKind::kSend, 0}, {}, bytes});
  } else {
    // The root's input to scratch first: in place, the fold writes the result over it before the root's turn.
    p.scratchBytes = bytes;
    const int own = p.add({StepKind::kCopy, -1, {BufferKind::kSend, 0}, {BufferKind::kScratch, 0}, bytes});
    addRankOrderFold(p, s.nranks, s.rank, {BufferKind::kScratch, 0}, {BufferKind::kRecv, 0}, bytes, own);
  }
  return p;
}

// Every rank sends to the root at once: the root's link carries n-1 buffers, and it reduces them.
double directCost(const CollShape& s, const CostModel& m) {
  const size_t bytes = s.count * s.elemSize;
  return m.round([&](int r) { return r == s.root ? -1 : s.root; }, bytes) +
         m.reduce(bytes * static_cast<size_t>(s.nranks - 1));
}

}  // namespace

CHORUS_REGISTER_RANK_ORDER_ALGORITHM(reduce_direct, "direct", CollType::kReduce, directReduce, directCost);

}  // namespace chorus::algo

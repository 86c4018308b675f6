// Pipelined chain Reduce: root+1 -> root+2 -> ... -> root, each rank adding its data to the partial sum as it
// streams through. Non-root ranks accumulate in scratch: their recv buffer may be null and must stay untouched.
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan chainReduce(const CollShape& s) {
  Plan p;
  const int n = s.nranks;
  const int position = mod(s.rank - s.root - 1, n);  // 0 = start of the chain, n-1 = root
  const size_t bytes = s.count * s.elemSize;
  const int next = mod(s.rank + 1, n), prev = mod(s.rank - 1, n);
  if (n == 1) {
    addInputCopy(p, bytes);
  } else if (position == 0) {
    p.add({StepKind::kSend, next, {BufferKind::kSend, 0}, {}, bytes});
  } else if (position < n - 1) {
    p.scratchBytes = bytes;
    int sum = p.add({StepKind::kRecvReduce, prev, {BufferKind::kSend, 0}, {BufferKind::kScratch, 0}, bytes});
    p.add({StepKind::kSend, next, {BufferKind::kScratch, 0}, {}, bytes, sum});
  } else {
    p.add({StepKind::kRecvReduce, prev, {BufferKind::kSend, 0}, {BufferKind::kRecv, 0}, bytes});
  }
  return p;
}

// The first bytes cross n-1 hops; then the buffer streams, summed on the way, at the speed of the slowest hop.
double chainCost(const CollShape& s, const CostModel& m) {
  const size_t bytes = s.count * s.elemSize;
  auto next = [&](int r) { return r == s.root ? -1 : (r + 1) % s.nranks; };
  return m.round(next, bytes) + (s.nranks - 2) * m.round(next, 0) + m.reduce(bytes);
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(reduce_chain, "ring", CollType::kReduce, chainReduce, chainCost);

}  // namespace chorus::algo

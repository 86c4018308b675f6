// Pipelined chain Broadcast: root -> root+1 -> ... -> root-1. Every rank forwards each chunk as soon as it has
// arrived, so for large messages the time approaches one transfer of the buffer.
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan chainBroadcast(const CollShape& s) {
  Plan p;
  const int n = s.nranks;
  const int position = mod(s.rank - s.root, n);  // 0 = root, n-1 = end of the chain
  const size_t bytes = s.count * s.elemSize;
  const int next = mod(s.rank + 1, n), prev = mod(s.rank - 1, n);
  if (position == 0) {
    if (n > 1) p.add({StepKind::kSend, next, {BufferKind::kSend, 0}, {}, bytes});
    addInputCopy(p, bytes);
    return p;
  }
  int recv = p.add({StepKind::kRecv, prev, {}, {BufferKind::kRecv, 0}, bytes});
  if (position < n - 1) p.add({StepKind::kSend, next, {BufferKind::kRecv, 0}, {}, bytes, recv});
  return p;
}

// The first bytes cross n-1 hops; then the buffer streams at the speed of the slowest hop.
double chainCost(const CollShape& s, const CostModel& m) {
  auto next = [&](int r) { return r == mod(s.root - 1, s.nranks) ? -1 : (r + 1) % s.nranks; };
  return m.round(next, s.count * s.elemSize) + (s.nranks - 2) * m.round(next, 0);
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(broadcast_chain, "ring", CollType::kBroadcast, chainBroadcast, chainCost);

}  // namespace chorus::algo

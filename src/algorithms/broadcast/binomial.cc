// Binomial-tree Broadcast: the root sends to the ranks 2^k away (relative to it), each of which forwards down its
// own subtree as the bytes arrive; log2(n) hops to the last rank instead of n-1 along a chain.
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan binomialBroadcast(const CollShape& s) {
  Plan p;
  const int n = s.nranks, v = mod(s.rank - s.root, n);  // position relative to the root
  const size_t bytes = s.count * s.elemSize;
  auto rankOf = [&](int position) { return mod(position + s.root, n); };
  int mask = 1, have = -1;
  BufferKind from = BufferKind::kSend;
  while (mask < n) {
    if (v & mask) {  // the parent clears this rank's lowest set bit
      have = p.add({StepKind::kRecv, rankOf(v - mask), {}, {BufferKind::kRecv, 0}, bytes});
      from = BufferKind::kRecv;
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {  // largest subtree first
    if (v + mask < n) p.add({StepKind::kSend, rankOf(v + mask), {from, 0}, {}, bytes, have});
  }
  if (v == 0) addInputCopy(p, bytes);
  return p;
}

// ceil(log2 n) rounds, each moving the whole buffer one hop.
double binomialCost(const CollShape& s, const CostModel& m) {
  double t = 0;
  for (int mask = 1; mask < s.nranks; mask *= 2) {
    t += m.round(
        [&](int r) {
          return mod(r - s.root, s.nranks) < mask && mod(r - s.root, s.nranks) + mask < s.nranks ? (r + mask) % s.nranks
                                                                                                 : -1;
        },
        s.count * s.elemSize);
  }
  return t;
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(broadcast_binomial, "binomial", CollType::kBroadcast, binomialBroadcast, binomialCost);

}  // namespace chorus::algo

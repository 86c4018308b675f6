// Binomial-tree Reduce: each rank adds the partial sums of its subtrees (children 1, 2, 4, ... positions away,
// relative to the root) to its own data and sends the result to its parent; log2(n) hops. Non-root ranks
// accumulate in scratch: their recv buffer may be null and must stay untouched.
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan binomialReduce(const CollShape& s) {
  Plan p;
  const int n = s.nranks, v = mod(s.rank - s.root, n);
  const size_t bytes = s.count * s.elemSize;
  auto rankOf = [&](int position) { return mod(position + s.root, n); };
  const BufferKind acc = v == 0 ? BufferKind::kRecv : BufferKind::kScratch;
  if (v != 0) p.scratchBytes = bytes;
  BufferKind from = BufferKind::kSend;
  int sum = -1, mask = 1;
  for (; mask < n && !(v & mask); mask <<= 1) {
    if (v + mask >= n) continue;
    sum = p.add({StepKind::kRecvReduce, rankOf(v + mask), {from, 0}, {acc, 0}, bytes, sum});
    from = acc;
  }
  if (v == 0) {
    if (sum < 0) addInputCopy(p, bytes);
  } else {
    p.add({StepKind::kSend, rankOf(v - mask), {from, 0}, {}, bytes, sum});
  }
  return p;
}

// ceil(log2 n) rounds, each moving the whole buffer one hop and adding it.
double binomialCost(const CollShape& s, const CostModel& m) {
  const size_t bytes = s.count * s.elemSize;
  double t = 0;
  for (int mask = 1; mask < s.nranks; mask *= 2) {
    t += m.round(
             [&](int r) {
               return mod(r - s.root, s.nranks) < mask && mod(r - s.root, s.nranks) + mask < s.nranks
                          ? (r + mask) % s.nranks
                          : -1;
             },
             bytes) +
         m.reduce(bytes);
  }
  return t;
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(reduce_binomial, "binomial", CollType::kReduce, binomialReduce, binomialCost);

}  // namespace chorus::algo

// Ring ReduceScatter: slice i of the result belongs to rank i. At step k rank r forwards its partial sum of slice
// r-k-1 and folds its own data into slice r-k-2; after n-1 steps it holds the full sum of slice r. Partial sums
// live in scratch (the recv buffer holds one slice only).
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan ringReduceScatter(const CollShape& s) {
  Plan p;
  const int n = s.nranks, r = s.rank;
  const size_t bytes = s.count * s.elemSize;  // count = recvcount
  auto off = [&](int slice) { return static_cast<size_t>(slice) * bytes; };
  if (n == 1) {
    addInputCopy(p, bytes);
    return p;
  }
  p.scratchBytes = static_cast<size_t>(n) * bytes;
  const int next = mod(r + 1, n), prev = mod(r - 1, n);
  int lastReduce = -1;
  for (int k = 0; k < n - 1; ++k) {
    int out = mod(r - k - 1, n), in = mod(r - k - 2, n);
    Slice from = k == 0 ? Slice{BufferKind::kSend, off(out)} : Slice{BufferKind::kScratch, off(out)};
    p.add({StepKind::kSend, next, from, {}, bytes, lastReduce});
    Slice to = k == n - 2 ? Slice{BufferKind::kRecv, 0} : Slice{BufferKind::kScratch, off(in)};
    lastReduce = p.add({StepKind::kRecvReduce, prev, {BufferKind::kSend, off(in)}, to, bytes});
  }
  return p;
}

// n-1 dependent steps of one block each.
double ringCost(const CollShape& s, const CostModel& m) {
  const size_t block = s.count * s.elemSize;
  auto next = [&](int r) { return (r + 1) % s.nranks; };
  return (s.nranks - 1) * m.round(next, block) + m.reduce(block * static_cast<size_t>(s.nranks - 1));
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(reduce_scatter_ring, "ring", CollType::kReduceScatter, ringReduceScatter, ringCost);

}  // namespace chorus::algo

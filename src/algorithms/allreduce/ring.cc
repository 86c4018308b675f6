// Ring AllReduce: a ring reduce-scatter followed by a ring all-gather, both on n slices of the buffer. Each step
// forwards the slice it finished in the previous step, so chunks stream around the ring (bandwidth-optimal:
// every rank sends 2(n-1)/n of the data).
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan ringAllReduce(const CollShape& s) {
  Plan p;
  const int n = s.nranks, r = s.rank;
  const RankSlices slice(s);
  if (n == 1) {
    addInputCopy(p, s.count * s.elemSize);
    return p;
  }
  const int next = mod(r + 1, n), prev = mod(r - 1, n);
  int lastReduce = -1;
  // Reduce-scatter: at step k send slice r-k, receive slice r-k-1 and add own data to it.
  for (int k = 0; k < n - 1; ++k) {
    int out = mod(r - k, n), in = mod(r - k - 1, n);
    Slice from = k == 0 ? Slice{BufferKind::kSend, slice.offset(out)} : Slice{BufferKind::kRecv, slice.offset(out)};
    p.add({StepKind::kSend, next, from, {}, slice.bytes(out), lastReduce});
    lastReduce = p.add({StepKind::kRecvReduce,
                        prev,
                        {BufferKind::kSend, slice.offset(in)},
                        {BufferKind::kRecv, slice.offset(in)},
                        slice.bytes(in)});
  }
  // Rank r now owns the full sum of slice r+1. All-gather: at step k send slice r+1-k, receive slice r-k.
  int lastRecv = lastReduce;
  for (int k = 0; k < n - 1; ++k) {
    int out = mod(r + 1 - k, n), in = mod(r - k, n);
    p.add({StepKind::kSend, next, {BufferKind::kRecv, slice.offset(out)}, {}, slice.bytes(out), lastRecv});
    lastRecv = p.add({StepKind::kRecv, prev, {}, {BufferKind::kRecv, slice.offset(in)}, slice.bytes(in)});
  }
  return p;
}

// 2(n-1) dependent steps of 1/n of the data; the busiest link bounds each.
double ringCost(const CollShape& s, const CostModel& m) {
  const size_t bytes = s.count * s.elemSize, slice = bytes / static_cast<size_t>(s.nranks);
  auto next = [&](int r) { return (r + 1) % s.nranks; };
  return 2.0 * (s.nranks - 1) * m.round(next, slice) + m.reduce(bytes - slice);
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(allreduce_ring, "ring", CollType::kAllReduce, ringAllReduce, ringCost);

}  // namespace chorus::algo

// Ring AllGather: rank r's block lands at offset r of every recv buffer. At step k rank r forwards block r-k
// (its own at k = 0) and receives block r-k-1.
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan ringAllGather(const CollShape& s) {
  Plan p;
  const int n = s.nranks, r = s.rank;
  const size_t bytes = s.count * s.elemSize;  // count = sendcount
  auto off = [&](int block) { return static_cast<size_t>(block) * bytes; };
  // In place (send == recv + r*bytes) the copy is a self-copy, which the engine skips.
  p.add({StepKind::kCopy, -1, {BufferKind::kSend, 0}, {BufferKind::kRecv, off(r)}, bytes});
  const int next = mod(r + 1, n), prev = mod(r - 1, n);
  int lastRecv = -1;
  for (int k = 0; k < n - 1; ++k) {
    int out = mod(r - k, n), in = mod(r - k - 1, n);
    Slice from = k == 0 ? Slice{BufferKind::kSend, 0} : Slice{BufferKind::kRecv, off(out)};
    p.add({StepKind::kSend, next, from, {}, bytes, lastRecv});
    lastRecv = p.add({StepKind::kRecv, prev, {}, {BufferKind::kRecv, off(in)}, bytes});
  }
  return p;
}

// n-1 dependent steps of one block each.
double ringCost(const CollShape& s, const CostModel& m) {
  auto next = [&](int r) { return (r + 1) % s.nranks; };
  return (s.nranks - 1) * m.round(next, s.count * s.elemSize);
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(allgather_ring, "ring", CollType::kAllGather, ringAllGather, ringCost);

}  // namespace chorus::algo

// Direct AllGather: every rank sends its block straight to every peer and receives every peer's block, in one
// round. The bytes are the ring's ((n-1) blocks out and in per rank) without its n-1 dependent rounds, which is
// what counts when ranks outnumber cores and each round waits for a descheduled peer.
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan directAllGather(const CollShape& s) {
  Plan p;
  const int n = s.nranks, r = s.rank;
  const size_t bytes = s.count * s.elemSize;  // count = sendcount
  auto off = [&](int block) { return static_cast<size_t>(block) * bytes; };
  // In place (send == recv + r*bytes) the copy is a self-copy, which the engine skips; nothing writes block r.
  p.add({StepKind::kCopy, -1, {BufferKind::kSend, 0}, {BufferKind::kRecv, off(r)}, bytes});
  for (int k = 1; k < n; ++k) p.add({StepKind::kSend, mod(r + k, n), {BufferKind::kSend, 0}, {}, bytes});
  for (int k = 1; k < n; ++k) {
    const int from = mod(r - k, n);
    p.add({StepKind::kRecv, from, {}, {BufferKind::kRecv, off(from)}, bytes});
  }
  return p;
}

// One round in which every rank sends each peer its block.
double directCost(const CollShape& s, const CostModel& m) { return m.allPairs(s.count * s.elemSize); }

}  // namespace

CHORUS_REGISTER_ALGORITHM(allgather_direct, "direct", CollType::kAllGather, directAllGather, directCost);

}  // namespace chorus::algo

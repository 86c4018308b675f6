// Direct AllGather: every rank sends its block straight to every peer and receives every peer's block, in one
// round: the ring's bytes ((n-1) blocks out and in per rank) without its n-1 dependent rounds, which is what counts
// when ranks outnumber cores and each round waits for a descheduled peer. Its sends are staged (Step::staged): from
// kStagedDirectFrom the peers of a host read each block in place, copied into shareable memory once for all of them
// where it is not there already, one copy per peer where the FIFOs make two.
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
  // Staged: where a peer cannot read the block where it is, it is copied once into shareable memory for them all.
  for (int k = 1; k < n; ++k) p.add({StepKind::kSend, mod(r + k, n), {BufferKind::kSend, 0}, {}, bytes, -1, -1, true});
  for (int k = 1; k < n; ++k) {
    const int from = mod(r - k, n);
    p.add({StepKind::kRecv, from, {}, {BufferKind::kRecv, off(from)}, bytes, -1, -1, true});
  }
  return p;
}

// One round in which every rank sends each peer its block: from kStagedDirectFrom read in place after the block's
// staging copy (charged, though buffers a peer can map need none; at two ranks that ties with the ring, which wins
// ties), through the FIFOs below.
double directCost(const CollShape& s, const CostModel& m) {
  const size_t bytes = s.count * s.elemSize;
  return bytes >= kStagedDirectFrom ? m.stagingCopy(bytes) + m.allPairsInPlace(bytes) : m.allPairs(bytes);
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(allgather_direct, "direct", CollType::kAllGather, directAllGather, directCost);

}  // namespace chorus::algo

// Staged AllGather: each rank copies its block once into its scratch and sends every peer its block from there, in
// one round. Between processes of a host the scratch is shareable memory, so each peer reads the block in place:
// one copy in plus one copy out per peer, where the direct algorithm's FIFOs copy each block in and out per peer.
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan stagedAllGather(const CollShape& s) {
  Plan p;
  const int n = s.nranks, r = s.rank;
  const size_t bytes = s.count * s.elemSize;  // count = sendcount
  auto off = [&](int block) { return static_cast<size_t>(block) * bytes; };
  p.scratchBytes = bytes;
  const int staged = p.add({StepKind::kCopy, -1, {BufferKind::kSend, 0}, {BufferKind::kScratch, 0}, bytes});
  // In place (send == recv + r*bytes) the copy is a self-copy, which the engine skips; nothing writes block r.
  p.add({StepKind::kCopy, -1, {BufferKind::kSend, 0}, {BufferKind::kRecv, off(r)}, bytes});
  for (int k = 1; k < n; ++k)
    p.add({StepKind::kSend, mod(r + k, n), {BufferKind::kScratch, 0}, {}, bytes, staged, -1, true});
  for (int k = 1; k < n; ++k) {
    const int from = mod(r - k, n);
    p.add({StepKind::kRecv, from, {}, {BufferKind::kRecv, off(from)}, bytes, -1, -1, true});
  }
  return p;
}

// The staging copy (charged whole: at two ranks it buys nothing, so it never ties with the direct algorithm), then
// one round of reads in place, or through the FIFOs below kStagedDirectFrom.
double stagedCost(const CollShape& s, const CostModel& m) {
  const size_t bytes = s.count * s.elemSize;
  return m.copy(bytes) + (bytes >= kStagedDirectFrom ? m.allPairsInPlace(bytes) : m.allPairs(bytes));
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(allgather_staged, "staged", CollType::kAllGather, stagedAllGather, stagedCost);

}  // namespace chorus::algo

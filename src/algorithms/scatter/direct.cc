// Direct Scatter: the root sends block i straight to rank i, to all peers at once.
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan directScatter(const CollShape& s) {
  Plan p;
  const size_t bytes = s.count * s.elemSize;
  if (s.rank != s.root) {
    p.add({StepKind::kRecv, s.root, {}, {BufferKind::kRecv, 0}, bytes});
    return p;
  }
  for (int peer = 0; peer < s.nranks; ++peer) {
    Slice from{BufferKind::kSend, static_cast<size_t>(peer) * bytes};
    if (peer == s.rank)
      p.add({StepKind::kCopy, -1, from, {BufferKind::kRecv, 0}, bytes});
    else
      p.add({StepKind::kSend, peer, from, {}, bytes});
  }
  return p;
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(scatter_direct, "direct", CollType::kScatter, directScatter, nullptr);

}  // namespace chorus::algo

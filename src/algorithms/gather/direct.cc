// Direct Gather: every rank sends its block straight to the root, which receives from all peers at once.
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan directGather(const CollShape& s) {
  Plan p;
  const size_t bytes = s.count * s.elemSize;
  if (s.rank != s.root) {
    p.add({StepKind::kSend, s.root, {BufferKind::kSend, 0}, {}, bytes});
    return p;
  }
  for (int peer = 0; peer < s.nranks; ++peer) {
    Slice to{BufferKind::kRecv, static_cast<size_t>(peer) * bytes};
    if (peer == s.rank)
      p.add({StepKind::kCopy, -1, {BufferKind::kSend, 0}, to, bytes});
    else
      p.add({StepKind::kRecv, peer, {}, to, bytes});
  }
  return p;
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(gather_direct, "direct", CollType::kGather, directGather, nullptr);

}  // namespace chorus::algo

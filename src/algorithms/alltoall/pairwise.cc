// Pairwise exchange AlltoAll and AlltoAllv: at round k rank r sends to r+k and receives from r-k. The engine
// overlaps the rounds (each peer has its own stream), the order only spreads the load evenly.
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan pairwise(const CollShape& s, auto sendOff, auto sendLen, auto recvOff, auto recvLen) {
  Plan p;
  const int n = s.nranks, r = s.rank;
  p.add({StepKind::kCopy, -1, {BufferKind::kSend, sendOff(r)}, {BufferKind::kRecv, recvOff(r)}, sendLen(r)});
  // All sends first: a rank that gets the core posts everything its peers wait for before it waits itself.
  for (int k = 1; k < n; ++k) {
    const int to = mod(r + k, n);
    p.add({StepKind::kSend, to, {BufferKind::kSend, sendOff(to)}, {}, sendLen(to)});
  }
  for (int k = 1; k < n; ++k) {
    const int from = mod(r - k, n);
    p.add({StepKind::kRecv, from, {}, {BufferKind::kRecv, recvOff(from)}, recvLen(from)});
  }
  return p;
}

Plan pairwiseAlltoAll(const CollShape& s) {
  const size_t bytes = s.count * s.elemSize;
  auto off = [&](int peer) { return static_cast<size_t>(peer) * bytes; };
  auto len = [&](int) { return bytes; };
  return pairwise(s, off, len, off, len);
}

Plan pairwiseAlltoAllv(const CollShape& s) {
  const size_t e = s.elemSize;
  const VariableLayout& v = *s.variable;
  return pairwise(
      s, [&](int peer) { return v.sendDispls[peer] * e; }, [&](int peer) { return v.sendCounts[peer] * e; },
      [&](int peer) { return v.recvDispls[peer] * e; }, [&](int peer) { return v.recvCounts[peer] * e; });
}

// Every rank posts its n-1 blocks at once.
double pairwiseCost(const CollShape& s, const CostModel& m) { return m.allPairs(s.count * s.elemSize); }

}  // namespace

CHORUS_REGISTER_ALGORITHM(alltoall_pairwise, "pairwise", CollType::kAlltoAll, pairwiseAlltoAll, pairwiseCost);
CHORUS_REGISTER_ALGORITHM(alltoallv_pairwise, "pairwise", CollType::kAlltoAllv, pairwiseAlltoAllv, nullptr);

}  // namespace chorus::algo

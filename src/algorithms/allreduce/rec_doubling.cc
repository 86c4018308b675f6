// Recursive-doubling AllReduce: in round k each rank exchanges its whole partial sum with the rank 2^k away and
// adds it, so after log2(p) rounds every rank holds the total; ranks beyond the largest power of two p fold their
// data onto a partner first and get the result back. Few rounds, whole buffer each round: for small messages.
// Both sides of an exchange add the same two values, so every rank ends with the same bits.
#include "algorithms/halving_doubling.hpp"

namespace chorus::algo {
namespace {

Plan recDoublingAllReduce(const CollShape& s) {
  Plan p;
  const PowerOfTwoCore core = powerOfTwoCore(s.nranks, s.rank);
  const size_t bytes = s.count * s.elemSize;
  if (core.me < 0) {
    p.add({StepKind::kSend, core.partner, {BufferKind::kSend, 0}, {}, bytes});
    p.add({StepKind::kRecv, core.partner, {}, {BufferKind::kRecv, 0}, bytes});
    return p;
  }
  // Each round's sum goes to the other buffer than the one its send reads (the peer may read that one straight
  // from this rank's memory): scratch in even rounds, recv in odd ones. Recv may be the send buffer (in place), so
  // round 0, which reads it, writes scratch. A sum overwrites a buffer only once the send that read it, one round
  // earlier, has finished.
  p.scratchBytes = core.p > 1 ? bytes : 0;
  BufferKind where = BufferKind::kSend;
  int made = -1, lastSend = -1;
  if (core.partner >= 0) {
    made = p.add({StepKind::kRecvReduce, core.partner, {BufferKind::kSend, 0}, {BufferKind::kRecv, 0}, bytes});
    where = BufferKind::kRecv;
  }
  for (int k = 0, mask = 1; mask < core.p; ++k, mask *= 2) {
    const int peer = core.me ^ mask;
    const BufferKind target = k % 2 == 0 ? BufferKind::kScratch : BufferKind::kRecv;
    const int sent = p.add({StepKind::kSend, peer, {where, 0}, {}, bytes, made});
    Step sum{StepKind::kRecvReduce, peer, {where, 0}, {target, 0}, bytes, made};
    sum.after = lastSend;
    made = p.add(sum);
    where = target;
    lastSend = sent;
  }
  if (where != BufferKind::kRecv) {
    Step copy{StepKind::kCopy, -1, {where, 0}, {BufferKind::kRecv, 0}, bytes, made};
    copy.after = lastSend;
    made = p.add(copy);
  }
  if (core.partner >= 0) p.add({StepKind::kSend, core.partner, {BufferKind::kRecv, 0}, {}, bytes, made});
  return p;
}

// log2(p) rounds of the whole buffer, plus handing it over and back for ranks outside the power-of-two core.
double recDoublingCost(const CollShape& s, const CostModel& m) {
  const PowerOfTwoCore c = powerOfTwoCore(s.nranks, 0);
  const size_t bytes = s.count * s.elemSize;
  double t = foldCost(m, c, bytes, bytes, true);
  for (int mask = 1; mask < c.p; mask *= 2) {
    t += m.round([&](int r) { return r < c.p ? r ^ mask : -1; }, bytes) + m.reduce(bytes);
  }
  return t;
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(allreduce_rec_doubling, "rec_doubling", CollType::kAllReduce, recDoublingAllReduce,
                          recDoublingCost);

}  // namespace chorus::algo

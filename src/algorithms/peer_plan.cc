#include "algorithms/peer_plan.hpp"

namespace chorus::algo::peer {

size_t barrierCount(const Plan& plan) {
  size_t n = 0;
  for (const Step& s : plan.steps) n += s.phases.empty() ? 0 : s.phases.size() - 1;
  return n;
}

size_t movedBytes(const Step& step, int nranks, size_t elementBytes) {
  size_t bytes = 0;
  for (const Phase& p : step.phases) {
    for (const Move& m : p.moves) bytes += m.bytes;
    for (const Combine& c : p.combines) bytes += c.count * elementBytes * static_cast<size_t>(nranks);
  }
  return bytes;
}

double planCost(const Plan& plan, const CollShape& shape, const CostModel& model) {
  size_t bytes = 0;
  for (const Step& s : plan.steps) bytes += movedBytes(s, shape.nranks, shape.elemSize);
  return static_cast<double>(barrierCount(plan)) * model.peerBarrier() + model.peerMove(bytes);
}

double costOfRankZero(PeerPlanGenerator generate, const CollShape& shape, const CostModel& model) {
  CollShape first = shape;
  first.rank = 0;
  return planCost(generate(first), first, model);
}

size_t rowElements(size_t slotBytes, size_t rows, size_t elementBytes) {
  size_t perRow = slotBytes / rows;
  perRow -= perRow % 16;
  return std::max<size_t>(1, perRow / elementBytes);
}

size_t shareStart(int q, int n, size_t count, size_t elementBytes) {
  if (q >= n) return count;
  const size_t unit = std::max<size_t>(1, 16 / elementBytes);
  const size_t at = count * static_cast<size_t>(q) / static_cast<size_t>(n);
  return std::min(count, at - at % unit);
}

Plan singleRank(const CollShape& shape) {
  Plan plan;
  Step& s = plan.steps.emplace_back();
  s.phases.resize(1);
  if (shape.peer.scaled || !shape.peer.inPlace)
    s.phases[0].moves.push_back({sendAt(0), recvAt(0), shape.count * shape.elemSize, shape.peer.scaled});
  return plan;
}

}  // namespace chorus::algo::peer

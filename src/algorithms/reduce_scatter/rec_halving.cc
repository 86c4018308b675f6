// Recursive-halving ReduceScatter: in round k each rank of the power-of-two core sends the half of its blocks the
// peer 2^(log p - 1 - k) away keeps, and adds the peer's half of its own; after log2(p) rounds it holds its block
// summed over every rank. With n not a power of two, block q+p travels with block q (rank q+p folds its input onto
// rank q first and gets its block back at the end).
#include "algorithms/halving_doubling.hpp"

namespace chorus::algo {
namespace {

Plan recHalvingReduceScatter(const CollShape& s) {
  Plan p;
  const PowerOfTwoCore core = powerOfTwoCore(s.nranks, s.rank);
  const size_t block = s.count * s.elemSize;  // count = recvcount
  auto blockOf = [&](int rank) { return rankBlock(rank, block); };
  if (block == 0) return p;
  if (core.me < 0) {
    for (int g = 0; g < core.p; ++g) {
      p.add({StepKind::kSend, core.partner, {BufferKind::kSend, blockOf(g).offset}, {}, block});
      if (g + core.p < s.nranks)
        p.add({StepKind::kSend, core.partner, {BufferKind::kSend, blockOf(g + core.p).offset}, {}, block});
    }
    p.add({StepKind::kRecv, core.partner, {}, {BufferKind::kRecv, 0}, block});
    return p;
  }
  p.scratchBytes = block * static_cast<size_t>(s.nranks);
  GroupedData data;
  for (int g = 0; g < core.p; ++g) {
    data.groups.push_back({blockOf(g)});
    if (g + core.p < s.nranks) data.groups.back().push_back(blockOf(g + core.p));
    data.states.emplace_back(data.groups.back().size());
  }
  if (core.partner >= 0) {
    for (int g = 0; g < core.p; ++g) {
      for (size_t k = 0; k < data.groups[g].size(); ++k) {
        const ByteRange& r = data.groups[g][k];
        data.states[g][k] = {BufferKind::kScratch, p.add({StepKind::kRecvReduce,
                                                          core.partner,
                                                          {BufferKind::kSend, r.offset},
                                                          {BufferKind::kScratch, r.offset},
                                                          r.bytes})};
      }
    }
  }
  addRecursiveHalving(p, core, BufferKind::kScratch, &data);
  const RangeState& mine = data.states[core.me][0];
  p.add({StepKind::kCopy, -1, {mine.where, blockOf(core.me).offset}, {BufferKind::kRecv, 0}, block, mine.producer});
  if (core.partner >= 0) {
    const RangeState& theirs = data.states[core.me][1];
    p.add({StepKind::kSend, core.partner, {theirs.where, blockOf(core.partner).offset}, {}, block, theirs.producer});
  }
  return p;
}

// log2(p) rounds; the round at distance m moves m/p of the n blocks.
double recHalvingCost(const CollShape& s, const CostModel& m) {
  const PowerOfTwoCore c = powerOfTwoCore(s.nranks, 0);
  const size_t block = s.count * s.elemSize, all = block * static_cast<size_t>(s.nranks);
  double t = foldCost(m, c, all, block, true);
  for (int mask = c.p / 2; mask >= 1; mask /= 2) {
    const size_t part = all / static_cast<size_t>(c.p) * static_cast<size_t>(mask);
    t += m.round([&](int r) { return r < c.p ? r ^ mask : -1; }, part) + m.reduce(part);
  }
  return t;
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(reduce_scatter_rec_halving, "rec_halving", CollType::kReduceScatter, recHalvingReduceScatter,
                          recHalvingCost);

}  // namespace chorus::algo

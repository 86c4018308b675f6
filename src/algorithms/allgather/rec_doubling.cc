// Recursive-doubling AllGather: in round k each rank of the power-of-two core exchanges the 2^k blocks it holds
// with the rank 2^k away; after log2(p) rounds every rank holds every block. With n not a power of two, rank q+p
// hands its block to rank q first (block q+p travels with block q) and gets all blocks from rank q at the end.
#include "algorithms/halving_doubling.hpp"

namespace chorus::algo {
namespace {

Plan recDoublingAllGather(const CollShape& s) {
  Plan p;
  const PowerOfTwoCore core = powerOfTwoCore(s.nranks, s.rank);
  const size_t block = s.count * s.elemSize;  // count = sendcount
  auto blockOf = [&](int rank) { return rankBlock(rank, block); };
  if (block == 0) return p;
  // In place (send == recv + rank*block) this copy is a self-copy, which the engine skips.
  const int own =
      p.add({StepKind::kCopy, -1, {BufferKind::kSend, 0}, {BufferKind::kRecv, blockOf(s.rank).offset}, block});
  if (core.me < 0) {
    p.add({StepKind::kSend, core.partner, {BufferKind::kSend, 0}, {}, block});
    for (int r = 0; r < s.nranks; ++r) {
      if (r != s.rank) p.add({StepKind::kRecv, core.partner, {}, {BufferKind::kRecv, blockOf(r).offset}, block});
    }
    return p;
  }
  GroupedData data;
  for (int g = 0; g < core.p; ++g) {
    data.groups.push_back({blockOf(g)});
    if (g + core.p < s.nranks) data.groups.back().push_back(blockOf(g + core.p));
    data.states.emplace_back(data.groups.back().size(), RangeState{BufferKind::kRecv, -1});
  }
  data.states[core.me][0].producer = own;
  if (core.partner >= 0) {
    data.states[core.me][1].producer =
        p.add({StepKind::kRecv, core.partner, {}, {BufferKind::kRecv, blockOf(core.partner).offset}, block});
  }
  addRecursiveDoubling(p, core, BufferKind::kRecv, &data);
  if (core.partner >= 0) {
    for (int r = 0; r < s.nranks; ++r) {
      if (r == core.partner) continue;
      const int g = r % core.p, k = r < core.p ? 0 : 1;
      p.add({StepKind::kSend,
             core.partner,
             {BufferKind::kRecv, blockOf(r).offset},
             {},
             block,
             data.states[g][k].producer});
    }
  }
  return p;
}

// log2(p) rounds; the round at distance m moves m/p of the n blocks. Its blocks came in over the rounds before it,
// so they leave as one message per earlier round (and the own block): log2(m) + 1 messages, each paying its latency
// on the network.
double recDoublingCost(const CollShape& s, const CostModel& m) {
  const PowerOfTwoCore c = powerOfTwoCore(s.nranks, 0);
  const size_t block = s.count * s.elemSize, all = block * static_cast<size_t>(s.nranks);
  double t = foldCost(m, c, block, all, false);
  int messages = 1;
  for (int mask = 1; mask < c.p; mask *= 2, ++messages) {
    const size_t part = all / static_cast<size_t>(c.p) * static_cast<size_t>(mask);
    t += m.round([&](int r) { return r < c.p ? r ^ mask : -1; }, part, nullptr, messages);
  }
  return t;
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(allgather_rec_doubling, "rec_doubling", CollType::kAllGather, recDoublingAllGather,
                          recDoublingCost);

}  // namespace chorus::algo

// Rabenseifner's AllReduce: a reduce-scatter by recursive halving and an all-gather by recursive doubling, on the
// largest power-of-two core of ranks (the others fold their data in first and get the result at the end). It moves
// as few bytes as a ring, 2(p-1)/p of the data per rank, in 2 log2(p) rounds instead of 2(p-1).
#include "algorithms/halving_doubling.hpp"

namespace chorus::algo {
namespace {

Plan rabenseifnerAllReduce(const CollShape& s) {
  Plan p;
  const PowerOfTwoCore core = powerOfTwoCore(s.nranks, s.rank);
  const size_t e = s.elemSize;
  GroupedData data;
  for (int g = 0; g < core.p; ++g) {
    const size_t b = sliceBegin(s.count, core.p, g), end = sliceBegin(s.count, core.p, g + 1);
    data.groups.push_back({{b * e, (end - b) * e}});
    data.states.push_back({RangeState{}});
  }
  if (core.me < 0) {  // folded onto core.partner: hand over the input, take back the result
    for (const auto& group : data.groups) {
      if (group[0].bytes > 0)
        p.add({StepKind::kSend, core.partner, {BufferKind::kSend, group[0].offset}, {}, group[0].bytes});
    }
    for (const auto& group : data.groups) {
      if (group[0].bytes > 0)
        p.add({StepKind::kRecv, core.partner, {}, {BufferKind::kRecv, group[0].offset}, group[0].bytes});
    }
    return p;
  }
  if (core.partner >= 0) {
    for (int g = 0; g < core.p; ++g) {
      const ByteRange& r = data.groups[g][0];
      if (r.bytes == 0) continue;
      data.states[g][0] = {BufferKind::kRecv, p.add({StepKind::kRecvReduce,
                                                     core.partner,
                                                     {BufferKind::kSend, r.offset},
                                                     {BufferKind::kRecv, r.offset},
                                                     r.bytes})};
    }
  }
  addRecursiveHalving(p, core, BufferKind::kRecv, &data);
  addRecursiveDoubling(p, core, BufferKind::kRecv, &data);
  for (int g = 0; g < core.p; ++g) {
    const ByteRange& r = data.groups[g][0];
    const RangeState& st = data.states[g][0];
    if (st.where != BufferKind::kRecv) {  // one rank alone: its input is the result
      p.add({StepKind::kCopy, -1, {st.where, r.offset}, {BufferKind::kRecv, r.offset}, r.bytes, st.producer});
    } else if (core.partner >= 0 && r.bytes > 0) {
      p.add({StepKind::kSend, core.partner, {BufferKind::kRecv, r.offset}, {}, r.bytes, st.producer});
    }
  }
  return p;
}

// Halving then doubling: round with distance m moves m/p of the data, 2 log2(p) rounds in all.
double rabenseifnerCost(const CollShape& s, const CostModel& m) {
  const PowerOfTwoCore c = powerOfTwoCore(s.nranks, 0);
  const size_t bytes = s.count * s.elemSize;
  double t = foldCost(m, c, bytes, bytes, true);
  for (int mask = c.p / 2; mask >= 1; mask /= 2) {
    const size_t part = bytes / static_cast<size_t>(c.p) * static_cast<size_t>(mask);
    const double exchange = m.round([&](int r) { return r < c.p ? r ^ mask : -1; }, part);
    t += 2 * exchange + m.reduce(part);
  }
  return t;
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(allreduce_rabenseifner, "rabenseifner", CollType::kAllReduce, rabenseifnerAllReduce,
                          rabenseifnerCost);

}  // namespace chorus::algo

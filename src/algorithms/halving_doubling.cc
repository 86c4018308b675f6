#include "algorithms/halving_doubling.hpp"

namespace chorus::algo {

PowerOfTwoCore powerOfTwoCore(int nranks, int rank) {
  PowerOfTwoCore c;
  while (c.p * 2 <= nranks) c.p *= 2;
  if (rank < c.p) {
    c.me = rank;
    c.partner = rank + c.p < nranks ? rank + c.p : -1;
  } else {
    c.me = -1;
    c.partner = rank - c.p;
  }
  return c;
}

void addRecursiveHalving(Plan& p, const PowerOfTwoCore& core, BufferKind dst, GroupedData* data) {
  int lo = 0;  // the first of the groups this rank still reduces (2 * mask of them)
  for (int mask = core.p / 2; mask >= 1; mask /= 2) {
    const int peer = core.me ^ mask, mid = lo + mask;
    const bool keepLower = (core.me & mask) == 0;
    const int giveLo = keepLower ? mid : lo, keepLo = keepLower ? lo : mid;
    // Send the half the peer keeps, then add the peer's half of ours (in the same group and range order on both).
    for (int g = giveLo; g < giveLo + mask; ++g) {
      for (size_t k = 0; k < data->groups[g].size(); ++k) {
        const ByteRange& r = data->groups[g][k];
        const RangeState& st = data->states[g][k];
        if (r.bytes > 0) p.add({StepKind::kSend, peer, {st.where, r.offset}, {}, r.bytes, st.producer});
      }
    }
    for (int g = keepLo; g < keepLo + mask; ++g) {
      for (size_t k = 0; k < data->groups[g].size(); ++k) {
        const ByteRange& r = data->groups[g][k];
        RangeState& st = data->states[g][k];
        if (r.bytes == 0) continue;
        st.producer = p.add({StepKind::kRecvReduce, peer, {st.where, r.offset}, {dst, r.offset}, r.bytes, st.producer});
        st.where = dst;
      }
    }
    lo = keepLo;
  }
}

void addRecursiveDoubling(Plan& p, const PowerOfTwoCore& core, BufferKind buf, GroupedData* data) {
  for (int mask = 1; mask < core.p; mask *= 2) {
    const int peer = core.me ^ mask;
    const int mine = core.me & ~(mask - 1), theirs = peer & ~(mask - 1);  // the aligned blocks of groups held
    for (int g = mine; g < mine + mask; ++g) {
      for (size_t k = 0; k < data->groups[g].size(); ++k) {
        const ByteRange& r = data->groups[g][k];
        const RangeState& st = data->states[g][k];
        if (r.bytes > 0) p.add({StepKind::kSend, peer, {st.where, r.offset}, {}, r.bytes, st.producer});
      }
    }
    for (int g = theirs; g < theirs + mask; ++g) {
      for (size_t k = 0; k < data->groups[g].size(); ++k) {
        const ByteRange& r = data->groups[g][k];
        if (r.bytes == 0) continue;
        data->states[g][k] = {buf, p.add({StepKind::kRecv, peer, {}, {buf, r.offset}, r.bytes})};
      }
    }
  }
}

double foldCost(const CostModel& m, const PowerOfTwoCore& core, size_t in, size_t out, bool reduces) {
  if (core.p >= m.nranks()) return 0;
  auto folded = [&](int r) { return r >= core.p ? r - core.p : -1; };
  return m.round(folded, in) + m.round(folded, out) + (reduces ? m.reduce(in) : 0);
}

}  // namespace chorus::algo

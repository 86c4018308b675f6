// Direct AllReduce: a direct ReduceScatter (rank j folds block j of every rank's input, in rank order) followed by
// a direct AllGather of the folded blocks. Every element is reduced in rank order, so the result has the same bits
// as the direct ReduceScatter's and one-shot's, on every rank: deterministic mode's AllReduce for large messages.
// Each rank sends 2(n-1)/n of the buffer, as the ring does, in two rounds instead of 2(n-1). The all-gather's
// transfers are staged (Step::staged): from kStagedDirectFrom per block the peers of a host read each folded block
// in place, copied once for all its readers where it is not in memory they map already. (Staging the
// reduce-scatter's too, each block read by one peer, measured no faster at 4 and 8 ranks.)
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan directAllReduce(const CollShape& s) {
  Plan p;
  const int n = s.nranks, r = s.rank;
  const RankSlices slice(s);
  if (n == 1) {
    addInputCopy(p, s.count * s.elemSize);
    return p;
  }
  // Own block to scratch first: in place, the fold writes recv block r before this rank's turn in it.
  p.scratchBytes = slice.bytes(r);
  const int own =
      p.add({StepKind::kCopy, -1, {BufferKind::kSend, slice.offset(r)}, {BufferKind::kScratch, 0}, slice.bytes(r)});
  std::vector<int> blockSent(n, -1);
  for (int k = 1; k < n; ++k) {
    const int to = mod(r + k, n);
    blockSent[to] = p.add({StepKind::kSend, to, {BufferKind::kSend, slice.offset(to)}, {}, slice.bytes(to)});
  }
  const int folded =
      addRankOrderFold(p, n, r, {BufferKind::kScratch, 0}, {BufferKind::kRecv, slice.offset(r)}, slice.bytes(r), own);
  for (int k = 1; k < n; ++k)
    p.add({StepKind::kSend, mod(r + k, n), {BufferKind::kRecv, slice.offset(r)}, {}, slice.bytes(r), folded, -1, true});
  for (int k = 1; k < n; ++k) {
    const int from = mod(r - k, n);
    // In place, block `from` of the input is still being sent to that rank: overwrite it only once it has gone.
    Step receive{StepKind::kRecv, from, {}, {BufferKind::kRecv, slice.offset(from)}, slice.bytes(from)};
    receive.after = blockSent[from];
    receive.staged = true;
    p.add(receive);
  }
  return p;
}

// Two all-pairs rounds of one block each, and n-1 reductions of one block. The staged all-gather is charged as the
// FIFOs' round still: charged as read in place (half a hop a byte, no pairs factor), the model took it over
// Rabenseifner and the ring at 4 ranks on 2 cores from 64 KiB to 1 MiB, where it lost to both
// (perf/archive/2026-11-27-oversubscribed-ranks-direct-algorithms-lose-from-256-kib.md).
double directCost(const CollShape& s, const CostModel& m) {
  const size_t block = (s.count + static_cast<size_t>(s.nranks) - 1) / static_cast<size_t>(s.nranks) * s.elemSize;
  return 2 * m.allPairs(block) + m.reduce(block * static_cast<size_t>(s.nranks - 1));
}

}  // namespace

CHORUS_REGISTER_RANK_ORDER_ALGORITHM(allreduce_direct, "direct", CollType::kAllReduce, directAllReduce, directCost);

}  // namespace chorus::algo

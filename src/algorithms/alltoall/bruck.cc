// Bruck AlltoAll for small blocks: ceil(log2 n) rounds instead of n-1 messages per rank. Block j of this rank's
// working array starts as the block for rank r+j; in round k every block whose index has bit k set moves to rank
// r+2^k (which keeps it at the same index), so after the last round index j holds the block rank r-j sent here.
// Each rank sends about n/2 blocks per round, log2(n)/2 times the data of a pairwise exchange: worth it only
// while the per-message latency dominates.
#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

Plan bruckAlltoAll(const CollShape& s) {
  Plan p;
  const int n = s.nranks, r = s.rank;
  const size_t block = s.count * s.elemSize;
  if (block == 0) return p;
  // Two working arrays: a block arriving goes to the array other than the one it is read from, so a send of
  // this round never races the receive that replaces its bytes.
  p.scratchBytes = 2 * block * static_cast<size_t>(n);
  auto at = [&](int array, int j) {
    return Slice{BufferKind::kScratch, (static_cast<size_t>(array) * n + static_cast<size_t>(j)) * block};
  };
  std::vector<int> array(n, 0), producer(n), lastReader(2 * n, -1);
  // Copy the input first: the final copies then never overwrite input a send still reads (in place).
  for (int j = 0; j < n; ++j) {
    producer[j] =
        p.add({StepKind::kCopy, -1, {BufferKind::kSend, static_cast<size_t>((r + j) % n) * block}, at(0, j), block});
  }
  for (int bit = 1; bit < n; bit <<= 1) {
    const int to = (r + bit) % n, from = mod(r - bit, n);
    for (int j = 1; j < n; ++j) {
      if (!(j & bit)) continue;
      lastReader[array[j] * n + j] = p.add({StepKind::kSend, to, at(array[j], j), {}, block, producer[j]});
    }
    for (int j = 1; j < n; ++j) {
      if (!(j & bit)) continue;
      const int other = 1 - array[j];
      Step recv{StepKind::kRecv, from, {}, at(other, j), block};
      recv.after = lastReader[other * n + j];
      producer[j] = p.add(recv);
      array[j] = other;
    }
  }
  for (int j = 0; j < n; ++j) {
    p.add({StepKind::kCopy,
           -1,
           at(array[j], j),
           {BufferKind::kRecv, static_cast<size_t>(mod(r - j, n)) * block},
           block,
           producer[j]});
  }
  return p;
}

// ceil(log2 n) rounds of about n/2 blocks each, plus copying the blocks in and out of the working array.
double bruckCost(const CollShape& s, const CostModel& m) {
  const size_t block = s.count * s.elemSize;
  double t = 2 * m.copy(block * static_cast<size_t>(s.nranks));
  for (int bit = 1; bit < s.nranks; bit <<= 1) {
    size_t blocks = 0;
    for (int j = 1; j < s.nranks; ++j) blocks += (j & bit) ? 1 : 0;
    t += m.round([&](int r) { return (r + bit) % s.nranks; }, blocks * block);
  }
  return t;
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(alltoall_bruck, "bruck", CollType::kAlltoAll, bruckAlltoAll, bruckCost);

}  // namespace chorus::algo

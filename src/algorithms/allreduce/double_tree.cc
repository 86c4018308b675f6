// Double binary tree AllReduce, as NCCL builds it: each half of the buffer is reduced up one binary tree and
// broadcast back down it, and the two trees are laid out so that a rank inside one is (nearly always) a leaf of the
// other, so both halves move at once and no rank forwards more than about the whole buffer. Depth log2(n): for
// latency at scale, where a ring's 2(n-1) rounds cost more than the trees' extra bytes.
#include <array>

#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"

namespace chorus::algo {
namespace {

struct TreeLinks {
  int parent = -1;
  std::array<int, 2> children{-1, -1};
};

// The in-order binary tree on positions 0..n-1: position 0 is the root with the one child P (the largest power of
// two below n); any other position's lowest set bit b gives its children p - b/2 and the largest p + l < n with
// l <= b/2, and its parent (p ^ b) | 2b, or p ^ b when that is out of range.
TreeLinks binaryTree(int n, int p) {
  TreeLinks t;
  int bit = 1;
  while (bit < n && !(bit & p)) bit <<= 1;
  if (p == 0) {
    if (n > 1) t.children[0] = bit >> 1;
    return t;
  }
  t.parent = (p ^ bit) | (bit << 1);
  if (t.parent >= n) t.parent = p ^ bit;
  const int low = bit >> 1;
  if (low > 0) t.children[0] = p - low;
  for (int l = low; l > 0; l >>= 1) {
    if (p + l < n) {
      t.children[1] = p + l;
      break;
    }
  }
  return t;
}

// Tree 1 is tree 0 on relabelled ranks: mirrored for an even n, shifted by one for an odd n (NCCL's choice).
TreeLinks treeOf(int which, int n, int rank) {
  auto toPosition = [&](int r) { return which == 0 ? r : (n % 2 == 0 ? n - 1 - r : mod(r - 1, n)); };
  auto toRank = [&](int p) { return p < 0 ? -1 : (which == 0 ? p : (n % 2 == 0 ? n - 1 - p : (p + 1) % n)); };
  TreeLinks t = binaryTree(n, toPosition(rank));
  t.parent = toRank(t.parent);
  for (int& c : t.children) c = toRank(c);
  return t;
}

Plan doubleTreeAllReduce(const CollShape& s) {
  Plan p;
  const size_t e = s.elemSize, half = s.count / 2;
  const size_t offsets[2] = {0, half * e}, sizes[2] = {half * e, (s.count - half) * e};
  const TreeLinks trees[2] = {treeOf(0, s.nranks, s.rank), treeOf(1, s.nranks, s.rank)};
  // Both trees go up before either comes down, so that a pair of ranks that meet in both trees (parent in one,
  // child in the other) queue their messages to each other in the same order.
  int sums[2] = {-1, -1};
  BufferKind from[2] = {BufferKind::kSend, BufferKind::kSend};
  for (int which = 0; which < 2; ++which) {
    if (sizes[which] == 0) continue;
    // Up: add the children's partial sums to this rank's input, then hand the sum to the parent.
    for (int child : trees[which].children) {
      if (child < 0) continue;
      sums[which] = p.add({StepKind::kRecvReduce,
                           child,
                           {from[which], offsets[which]},
                           {BufferKind::kRecv, offsets[which]},
                           sizes[which],
                           sums[which]});
      from[which] = BufferKind::kRecv;
    }
    if (trees[which].parent >= 0) {
      p.add({StepKind::kSend, trees[which].parent, {from[which], offsets[which]}, {}, sizes[which], sums[which]});
    }
  }
  for (int which = 0; which < 2; ++which) {
    if (sizes[which] == 0) continue;
    const TreeLinks& t = trees[which];
    int result = sums[which];
    if (t.parent >= 0) {
      // The total comes back down; each of its bytes arrives only after the parent took this rank's.
      result = p.add({StepKind::kRecv, t.parent, {}, {BufferKind::kRecv, offsets[which]}, sizes[which]});
    } else if (result < 0) {
      result = p.add({StepKind::kCopy,
                      -1,
                      {BufferKind::kSend, offsets[which]},
                      {BufferKind::kRecv, offsets[which]},
                      sizes[which]});
    }
    // Down: forward the total to the children as it arrives.
    for (int child : t.children) {
      if (child >= 0) p.add({StepKind::kSend, child, {BufferKind::kRecv, offsets[which]}, {}, sizes[which], result});
    }
  }
  return p;
}

// Each half goes up and down a tree of depth about log2(n): 2 log2(n) latencies; the busiest rank moves about the
// whole buffer each way; every rank reduces its children's halves.
double doubleTreeCost(const CollShape& s, const CostModel& m) {
  const size_t bytes = s.count * s.elemSize;
  int depth = 0;
  for (int span = 1; span < s.nranks; span *= 2) ++depth;
  auto parent = [&](int r) { return treeOf(0, s.nranks, r).parent; };
  return 2.0 * depth * m.round(parent, 0) + 2 * m.round(parent, bytes) + m.reduce(bytes);
}

}  // namespace

CHORUS_REGISTER_ALGORITHM(allreduce_double_tree, "tree", CollType::kAllReduce, doubleTreeAllReduce, doubleTreeCost);

}  // namespace chorus::algo

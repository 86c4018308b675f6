#include "algorithms/ring_steps.hpp"

namespace chorus::algo {

int addFence(Plan& p, int dep) {
  if (dep < 0) return -1;
  return p.add({StepKind::kCopy, -1, {BufferKind::kScratch, 0}, {BufferKind::kScratch, 0}, 0, dep});
}

int addRingReduceScatter(Plan& p, const std::vector<int>& group, int me, const SliceOf& slice, BufferKind src,
                         BufferKind dst, int ready) {
  const int g = static_cast<int>(group.size());
  const ByteRange mine = slice(me);
  if (g == 1) {
    if (src == dst) return ready;
    return p.add({StepKind::kCopy, -1, {src, mine.offset}, {dst, mine.offset}, mine.bytes, ready});
  }
  const int next = group[mod(me + 1, g)], prev = group[mod(me - 1, g)];
  // At step k send slice me-k-1 (this rank's contribution at k = 0, else the sum it finished at step k-1) and
  // add the incoming sum of slice me-k-2 to this rank's contribution; the last one is slice me.
  int last = -1;
  for (int k = 0; k < g - 1; ++k) {
    const ByteRange out = slice(mod(me - k - 1, g)), in = slice(mod(me - k - 2, g));
    if (k == 0) {
      p.add({StepKind::kSend, next, {src, out.offset}, {}, out.bytes, ready});
    } else {
      p.add({StepKind::kSend, next, {dst, out.offset}, {}, out.bytes, last});
    }
    last = p.add({StepKind::kRecvReduce, prev, {src, in.offset}, {dst, in.offset}, in.bytes, ready});
  }
  return last;
}

std::vector<int> addRingAllGather(Plan& p, const std::vector<int>& group, int me, const SliceOf& slice, BufferKind buf,
                                  int ownReady) {
  const int g = static_cast<int>(group.size());
  std::vector<int> made(g, -1);
  made[me] = ownReady;
  if (g == 1) return made;
  const int next = group[mod(me + 1, g)], prev = group[mod(me - 1, g)];
  // At step k forward slice me-k (this rank's own at k = 0) and receive slice me-k-1.
  for (int k = 0; k < g - 1; ++k) {
    const int outSlice = mod(me - k, g), inSlice = mod(me - k - 1, g);
    const ByteRange out = slice(outSlice), in = slice(inSlice);
    p.add({StepKind::kSend, next, {buf, out.offset}, {}, out.bytes, made[outSlice]});
    made[inSlice] = p.add({StepKind::kRecv, prev, {}, {buf, in.offset}, in.bytes});
  }
  return made;
}

}  // namespace chorus::algo

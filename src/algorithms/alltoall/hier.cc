// Hierarchical AlltoAll for several hosts with the same number of ranks: inside each host, local rank i hands
// local rank j the blocks for the ranks at local position j on every host; then local rank j sends each other
// host's rank at position j the L blocks its host has for it in one message. H-1 network messages per rank
// instead of L(H-1): the same bytes cross the network, in fewer and larger messages.
#include "algorithms/cost.hpp"
#include "algorithms/hosts.hpp"
#include "algorithms/ring_steps.hpp"

namespace chorus::algo {
namespace {

// A step that finishes once all of `steps` have: a chain of empty copies, each waiting for one more.
int addFenceAll(Plan& p, const std::vector<int>& steps) {
  int fence = -1;
  for (int s : steps) {
    Step f{StepKind::kCopy, -1, {BufferKind::kScratch, 0}, {BufferKind::kScratch, 0}, 0, fence};
    f.after = s;
    fence = p.add(f);
  }
  return fence;
}

Plan hierAlltoAll(const CollShape& s) {
  Plan p;
  HostGroups g;
  hostGroupsOf(s, &g);
  const size_t block = s.count * s.elemSize;
  const int H = static_cast<int>(g.ranksOfHost.size()), L = static_cast<int>(g.local.size());
  if (block == 0) return p;
  // Scratch: outgoing[h][i] = the block local rank i has for the rank at this rank's position on host h, then
  // incoming[h][i] = the block rank i of host h has for this rank (this host's included).
  const size_t all = block * static_cast<size_t>(s.nranks);
  p.scratchBytes = 2 * all;
  auto out = [&](int h, int i) { return Slice{BufferKind::kScratch, (static_cast<size_t>(h) * L + i) * block}; };
  auto in = [&](int h, int i) { return Slice{BufferKind::kScratch, all + (static_cast<size_t>(h) * L + i) * block}; };
  auto offsetOf = [&](int rank) { return static_cast<size_t>(rank) * block; };
  const int me = g.localIndex;
  // 1. Inside the host: local rank j gets the blocks for every rank at position j (its own one to keep).
  std::vector<std::vector<int>> staged(H);
  for (int h = 0; h < H; ++h) {
    const int to = g.ranksOfHost[h][me];
    if (h == g.host) {
      p.add({StepKind::kCopy, -1, {BufferKind::kSend, offsetOf(s.rank)}, {BufferKind::kRecv, offsetOf(s.rank)}, block});
    } else {
      staged[h].push_back(p.add({StepKind::kCopy, -1, {BufferKind::kSend, offsetOf(to)}, out(h, me), block}));
    }
  }
  // In place (send == recv) a block arriving for slot X overwrites the block this rank sends to X: every write
  // into recv waits for the send that reads the same slot (those sends never wait for a write: no cycle).
  std::vector<std::vector<int>> sentBlock(H, std::vector<int>(L, -1));  // [host][local index] of the destination
  for (int k = 1; k < L; ++k) {
    const int peerIndex = (me + k) % L, peer = g.local[peerIndex];
    for (int h = 0; h < H; ++h) {
      sentBlock[h][peerIndex] =
          p.add({StepKind::kSend, peer, {BufferKind::kSend, offsetOf(g.ranksOfHost[h][peerIndex])}, {}, block});
    }
  }
  for (int k = 1; k < L; ++k) {
    const int fromIndex = mod(me - k, L), from = g.local[fromIndex];
    for (int h = 0; h < H; ++h) {
      if (h == g.host) {
        const int got = p.add({StepKind::kRecv, from, {}, in(h, fromIndex), block});
        Step place{StepKind::kCopy, -1, in(h, fromIndex), {BufferKind::kRecv, offsetOf(from)}, block, got};
        place.after = sentBlock[g.host][fromIndex];
        p.add(place);
      } else {
        staged[h].push_back(p.add({StepKind::kRecv, from, {}, out(h, fromIndex), block}));
      }
    }
  }
  // 2. Across hosts: one message of L blocks per other host, each block then to its place.
  for (int k = 1; k < H; ++k) {
    const int h = (g.host + k) % H;
    p.add({StepKind::kSend,
           g.ranksOfHost[h][me],
           out(h, 0),
           {},
           block * static_cast<size_t>(L),
           addFenceAll(p, staged[h])});
  }
  for (int k = 1; k < H; ++k) {
    const int h = mod(g.host - k, H);
    const int got = p.add({StepKind::kRecv, g.ranksOfHost[h][me], {}, in(h, 0), block * static_cast<size_t>(L)});
    for (int i = 0; i < L; ++i) {
      Step place{StepKind::kCopy, -1, in(h, i), {BufferKind::kRecv, offsetOf(g.ranksOfHost[h][i])}, block, got};
      place.after = sentBlock[h][i];
      p.add(place);
    }
  }
  return p;
}

// One all-pairs round inside the host (H blocks per pair), then H-1 network messages of L blocks per rank.
double hierCost(const CollShape& s, const CostModel& m) {
  const HostRings h = hostRingsOf(s);
  const size_t block = s.count * s.elemSize;
  const CostInputs& in = m.inputs();
  const double local =
      m.localLatency(h.perHost - 1) + static_cast<double>(block) * h.hosts * (h.perHost - 1) / (in.intra.beta * 1e3);
  const double hostBytes = static_cast<double>(block) * h.perHost * h.perHost * (h.hosts - 1);
  const double network = (h.hosts - 1) * in.inter.alpha + hostBytes / (in.inter.beta * 1e3);
  return local + network + 2 * in.roundPenalty + m.copy(block * static_cast<size_t>(s.nranks));
}

}  // namespace

CHORUS_REGISTER_ALGORITHM_IF(alltoall_hier, "hier", CollType::kAlltoAll, hierAlltoAll, hierCost, hierarchicalApplies);

}  // namespace chorus::algo

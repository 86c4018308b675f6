// The device path's plans (gpu/peer_steps.hpp), run on host memory: every rank's steps with slots in host vectors,
// the moves as copies and the reductions with the host path's own functions. Checked: every rank's result against
// the reference; every rank's plan has the same phases; nothing reads or writes outside its buffer or slot; and no
// rank writes slot bytes that another rank reads or writes between the same two barriers (the ranks' streams run
// concurrently there), so the results cannot depend on how the GPU interleaves the ranks.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gpu/peer_steps.hpp"
#include "kernels/reduce.hpp"
#include "tests/support/reference.hpp"

namespace chorus::gpu {
namespace {

using algo::CollType;
using chorus::testing::inputValue;
using chorus::testing::mismatches;
using chorus::testing::preMulScalar;
using chorus::testing::Reduced;
using chorus::testing::storeValue;

struct Shape {
  CollType coll;
  DataType type;
  RedOp op;
  size_t count;
  bool inPlace;
  int root;
  int nranks;
  PeerStepLimits limits;
};

std::string describe(const Shape& s) {
  return std::string(algo::collName(s.coll)) + "(" + dataTypeName(s.type) + ", " + redOpName(s.op.kind) + ", count " +
         std::to_string(s.count) + (s.inPlace ? ", in place" : "") + ", root " + std::to_string(s.root) + ", " +
         std::to_string(s.nranks) + " ranks, slot " + std::to_string(s.limits.slotBytes) + ", one-shot up to " +
         std::to_string(s.limits.oneShotBytes) + ")";
}

// One rank's buffers, the call it makes and what its receive buffer must hold afterwards.
struct Rank {
  std::vector<unsigned char> send, recv, expected;
  Operation op;
  bool checks = true;  // false where the call leaves recv alone (Reduce and Gather off the root)
  std::vector<unsigned char> slots[2];
  std::vector<Step> steps;
};

void fillMove(unsigned char* p, DataType t, int rank, size_t first, size_t n) {
  for (size_t i = 0; i < n; ++i) storeValue(p, i, t, inputValue(nullptr, t, rank, first + i));
}
void fillReduce(unsigned char* p, const Shape& s, int rank, size_t n) {
  for (size_t i = 0; i < n; ++i) storeValue(p, i, s.type, inputValue(&s.op, s.type, rank, i));
}

// The rank's buffers and call, laid out as the host tests' cases lay them out (tests/support/collective_case.cc).
Rank makeRank(const Shape& s, int r) {
  const size_t c = s.count, e = dataTypeSize(s.type), n = static_cast<size_t>(s.nranks);
  Rank k;
  Operation& op = k.op;
  op.type = s.coll;
  op.dtype = s.type;
  op.op = s.op;
  if (s.op.kind == RedOpKind::kPreMulSum) op.op.scalar = preMulScalar(r);
  op.count = c;
  op.root = s.root;
  const Reduced reduced(s.op, s.type, s.nranks);
  switch (s.coll) {
    case CollType::kAllReduce:
    case CollType::kReduce:
      k.send.resize(c * e);
      k.recv.resize(c * e, 0xee);
      k.expected = k.recv;
      fillReduce(s.inPlace ? k.recv.data() : k.send.data(), s, r, c);
      op.send = s.inPlace ? k.recv.data() : k.send.data();
      op.recv = k.recv.data();
      if (s.coll == CollType::kReduce && r != s.root) {
        k.checks = false;
      } else {
        for (size_t i = 0; i < c; ++i) reduced.store(k.expected.data(), i, i);
      }
      break;
    case CollType::kReduceScatter:
      k.send.resize(c * n * e);
      k.recv.resize(c * n * e, 0xee);
      fillReduce(s.inPlace ? k.recv.data() : k.send.data(), s, r, c * n);
      op.send = s.inPlace ? k.recv.data() : k.send.data();
      op.recv = k.recv.data() + (s.inPlace ? r * c * e : 0);
      k.expected = k.recv;
      for (size_t i = 0; i < c; ++i) reduced.store(k.expected.data() + (s.inPlace ? r * c * e : 0), i, r * c + i);
      break;
    case CollType::kAllGather:
    case CollType::kGather:
      k.send.resize(c * e);
      k.recv.resize(c * n * e, 0xee);
      op.send = s.inPlace ? k.recv.data() + r * c * e : k.send.data();
      op.recv = k.recv.data();
      fillMove(const_cast<unsigned char*>(static_cast<const unsigned char*>(op.send)), s.type, r, 0, c);
      k.expected = k.recv;
      if (s.coll == CollType::kGather && r != s.root) {
        k.checks = false;
      } else {
        for (int q = 0; q < s.nranks; ++q) fillMove(k.expected.data() + q * c * e, s.type, q, 0, c);
      }
      break;
    case CollType::kAlltoAll:
      k.send.resize(c * n * e);
      k.recv.resize(c * n * e, 0xee);
      fillMove(k.send.data(), s.type, r, 0, c * n);
      op.send = k.send.data();
      op.recv = k.recv.data();
      k.expected = k.recv;
      for (int q = 0; q < s.nranks; ++q) fillMove(k.expected.data() + q * c * e, s.type, q, c * r, c);
      break;
    case CollType::kBroadcast:
      k.send.resize(c * e);
      k.recv.resize(c * e, 0xee);
      op.send = s.inPlace ? k.recv.data() : r == s.root ? k.send.data() : nullptr;
      op.recv = k.recv.data();
      if (r == s.root)
        fillMove(const_cast<unsigned char*>(static_cast<const unsigned char*>(op.send)), s.type, r, 0, c);
      k.expected = k.recv;
      fillMove(k.expected.data(), s.type, s.root, 0, c);
      break;
    case CollType::kScatter:
      k.send.resize(c * n * e);
      k.recv.resize(c * e, 0xee);
      if (r == s.root) fillMove(k.send.data(), s.type, r, 0, c * n);
      op.send = r == s.root ? k.send.data() : nullptr;
      op.recv = s.inPlace && r == s.root ? k.send.data() + r * c * e : k.recv.data();
      k.expected = k.recv;
      fillMove(k.expected.data(), s.type, s.root, r * c, c);
      if (s.inPlace && r == s.root) {
        k.checks = false;  // the result is the send buffer's own block, which nothing may change
      }
      break;
    default:
      break;
  }
  for (auto& slot : k.slots) slot.assign(s.limits.slotBytes, 0xdd);
  k.steps = planPeerSteps(op, r, s.nranks, s.limits);
  return k;
}

// Returns the problem `check` found, if any.
#define CHORUS_RETURN_PROBLEM(check)        \
  do {                                      \
    std::string problem_ = (check);         \
    if (!problem_.empty()) return problem_; \
  } while (0)

struct Access {
  int owner;  // whose slot
  int parity;
  size_t lo, hi;
  bool write;
};

class Simulation {
 public:
  explicit Simulation(const Shape& s) : s_(s) {
    for (int r = 0; r < s.nranks; ++r) ranks_.push_back(makeRank(s, r));
  }

  // Runs every rank's steps; "" or the first problem.
  std::string run() {
    const std::vector<Step>& first = ranks_[0].steps;
    for (const Rank& k : ranks_) {
      if (k.steps.size() != first.size()) return "ranks plan different numbers of steps";
      for (size_t i = 0; i < first.size(); ++i)
        if (k.steps[i].phases.size() != first[i].phases.size()) return "ranks plan different phases";
    }
    for (size_t step = 0; step < first.size(); ++step) {
      const int parity = static_cast<int>(step % 2);
      for (size_t phase = 0; phase < first[step].phases.size(); ++phase) {
        if (phase > 0) CHORUS_RETURN_PROBLEM(barrier());
        // Between two barriers the ranks run in any order; here, alternately forwards and backwards.
        for (int i = 0; i < s_.nranks; ++i) {
          const int r = (step + phase) % 2 ? s_.nranks - 1 - i : i;
          std::string failed = runPhase(r, ranks_[r].steps[step].phases[phase], parity);
          if (!failed.empty()) return "rank " + std::to_string(r) + ": " + failed;
        }
      }
    }
    CHORUS_RETURN_PROBLEM(barrier());
    for (int r = 0; r < s_.nranks; ++r) {
      const Rank& k = ranks_[r];
      if (!k.checks) continue;
      size_t bad = 0;
      const size_t wrong =
          mismatches(k.recv.data(), k.expected.data(), k.recv.size() / dataTypeSize(s_.type), s_.type, &bad);
      if (wrong)
        return "rank " + std::to_string(r) + ": " + std::to_string(wrong) + " wrong elements, the first at " +
               std::to_string(bad);
    }
    return "";
  }

 private:
  // The end of a barrier interval: no rank may have written slot bytes another rank touched in it.
  std::string barrier() {
    std::string found;
    for (size_t i = 0; i < accesses_.size() && found.empty(); ++i)
      for (size_t j = 0; j < accesses_.size() && found.empty(); ++j) {
        const auto& [ri, a] = accesses_[i];
        const auto& [rj, b] = accesses_[j];
        if (ri == rj || !a.write || a.owner != b.owner || a.parity != b.parity) continue;
        if (a.lo < b.hi && b.lo < a.hi) {
          found = "rank " + std::to_string(ri) + " writes bytes " + std::to_string(a.lo) + "-" + std::to_string(a.hi) +
                  " of rank " + std::to_string(a.owner) + "'s slot " + std::to_string(a.parity) + " while rank " +
                  std::to_string(rj) + (b.write ? " writes " : " reads ") + "bytes " + std::to_string(b.lo) + "-" +
                  std::to_string(b.hi) + " between the same barriers";
        }
      }
    accesses_.clear();
    return found;
  }

  // The address of `ref` for rank r, after checking `bytes` from it lie inside the buffer or slot.
  unsigned char* resolve(int r, const Ref& ref, size_t bytes, int parity, bool write, std::string* error) {
    Rank& k = ranks_[r];
    auto inside = [&](unsigned char* p, const std::vector<unsigned char>& buffer) -> unsigned char* {
      if (p < buffer.data() || p + bytes > buffer.data() + buffer.size()) {
        *error = "an access outside its buffer";
        return nullptr;
      }
      return p;
    };
    switch (ref.place) {
      case Place::kSend: {
        auto* p = const_cast<unsigned char*>(static_cast<const unsigned char*>(k.op.send)) + ref.offset;
        if (p >= k.recv.data() && p < k.recv.data() + k.recv.size()) return inside(p, k.recv);
        return inside(p, k.send);
      }
      case Place::kRecv: {
        auto* p = static_cast<unsigned char*>(k.op.recv) + ref.offset;
        if (p >= k.send.data() && p < k.send.data() + k.send.size()) return inside(p, k.send);
        return inside(p, k.recv);
      }
      case Place::kSlot:
        if (ref.rank < 0 || ref.rank >= s_.nranks) {
          *error = "a slot of no rank";
          return nullptr;
        }
        accesses_.push_back({r, {ref.rank, parity, ref.offset, ref.offset + bytes, write}});
        return inside(ranks_[ref.rank].slots[parity].data() + ref.offset, ranks_[ref.rank].slots[parity]);
    }
    return nullptr;
  }

  std::string runPhase(int r, const Phase& phase, int parity) {
    const size_t e = dataTypeSize(s_.type);
    std::string error;
    for (const Move& m : phase.moves) {
      unsigned char* from = resolve(r, m.from, m.bytes, parity, false, &error);
      unsigned char* to = resolve(r, m.to, m.bytes, parity, true, &error);
      if (!error.empty()) return error;
      if (m.scaled) {
        kernels::scale(to, from, m.bytes / e, s_.type, ranks_[r].op.op.scalar);
      } else {
        memmove(to, from, m.bytes);
      }
    }
    for (const Combine& c : phase.combines) {
      std::vector<unsigned char> acc(c.count * e);
      const kernels::ReduceFn reduce = kernels::reduceFunction(s_.type, s_.op.kind);
      for (int q = 0; q < s_.nranks; ++q) {
        unsigned char* from = resolve(r, {Place::kSlot, q, c.slotOffset}, c.count * e, parity, false, &error);
        if (!error.empty()) return error;
        if (q == 0) {
          memcpy(acc.data(), from, acc.size());
        } else {
          reduce(acc.data(), acc.data(), from, c.count);
        }
      }
      if (s_.op.kind == RedOpKind::kAvg) kernels::divide(acc.data(), c.count, s_.type, s_.nranks);
      for (const Ref& to : c.to) {
        unsigned char* p = resolve(r, to, acc.size(), parity, true, &error);
        if (!error.empty()) return error;
        memcpy(p, acc.data(), acc.size());
      }
    }
    return "";
  }

  Shape s_;
  std::vector<Rank> ranks_;
  std::vector<std::pair<int, Access>> accesses_;  // this barrier interval's slot accesses, by rank
};

const std::vector<CollType> kCollectives = {CollType::kAllReduce, CollType::kReduceScatter, CollType::kAllGather,
                                            CollType::kAlltoAll,  CollType::kBroadcast,     CollType::kReduce,
                                            CollType::kGather,    CollType::kScatter};

bool reduces(CollType c) {
  return c == CollType::kAllReduce || c == CollType::kReduceScatter || c == CollType::kReduce;
}

TEST(GpuPeerSteps, EveryCollectiveOnEverySplitIsExactAndRaceFree) {
  int checked = 0;
  for (CollType coll : kCollectives)
    for (int nranks : {1, 2, 3, 5})
      for (size_t count : {size_t{1}, size_t{7}, size_t{100}, size_t{1001}})
        for (size_t slotBytes : {size_t{16} * nranks, size_t{96} * nranks, size_t{4096}})
          for (size_t oneShot : {size_t{0}, size_t{1} << 20})
            for (bool inPlace : {false, true}) {
              if (inPlace && coll == CollType::kAlltoAll) continue;
              if (oneShot && coll != CollType::kAllReduce) continue;
              for (DataType type : {DataType::kFloat32, DataType::kInt8, DataType::kFloat16, DataType::kFloat64})
                for (RedOp op : reduces(coll)
                                    ? std::vector<RedOp>{RedOp::sum(), RedOp::avg(), RedOp::preMulSum(1), RedOp::max()}
                                    : std::vector<RedOp>{RedOp::sum()}) {
                  if (op.kind == RedOpKind::kAvg && type == DataType::kInt8) continue;  // integer avg truncates
                  Shape s{coll, type, op, count, inPlace, nranks - 1, nranks, {slotBytes, oneShot}};
                  Simulation sim(s);
                  const std::string failed = sim.run();
                  ASSERT_EQ(failed, "") << describe(s);
                  ++checked;
                }
            }
  EXPECT_GT(checked, 3000);
}

TEST(GpuPeerSteps, LargeCallsTakeSeveralStepsAndAllReduceSwitchesToTwoShot) {
  Operation op;
  op.type = CollType::kAllReduce;
  op.dtype = DataType::kFloat32;
  op.count = 1000;
  float in[1000], out[1000];
  op.send = in;
  op.recv = out;
  PeerStepLimits small{1024, 4000};  // 256 floats per step; one-shot up to 1000 floats
  std::vector<Step> steps = planPeerSteps(op, 0, 4, small);
  ASSERT_EQ(steps.size(), 4u);  // 256 + 256 + 256 + 232
  EXPECT_EQ(steps[0].phases.size(), 2u);
  EXPECT_EQ(barrierCount(steps), 4u);
  PeerStepLimits twoShot{1024, 3999};
  steps = planPeerSteps(op, 0, 4, twoShot);
  ASSERT_EQ(steps[0].phases.size(), 3u);
  EXPECT_EQ(barrierCount(steps), 8u);
  // Rank 0 reduces the first quarter of each step's 256 floats, on a 16-byte boundary.
  ASSERT_EQ(steps[0].phases[1].combines.size(), 1u);
  EXPECT_EQ(steps[0].phases[1].combines[0].slotOffset, 0u);
  EXPECT_EQ(steps[0].phases[1].combines[0].count, 64u);
}

TEST(GpuPeerSteps, SmallCallsOfUpToEightRanksRunAsOneKernel) {
  std::vector<float> in(8 * 1000), out(8 * 1000);
  Operation op;
  op.dtype = DataType::kFloat32;
  op.count = 1000;
  op.send = in.data();
  op.recv = out.data();
  const PeerStepLimits limits;  // the defaults: one-shot up to 1 MiB, one kernel up to 4 MiB moved
  for (CollType coll : kCollectives)
    for (int nranks : {1, 2, 8}) {
      op.type = coll;
      EXPECT_TRUE(runsAsOneKernel(planPeerSteps(op, 0, nranks, limits), nranks, 4, limits))
          << algo::collName(coll) << " at " << nranks << " ranks";
    }
  op.type = CollType::kAlltoAll;
  EXPECT_FALSE(runsAsOneKernel(planPeerSteps(op, 0, 9, limits), 9, 4, limits)) << "past the kernel's 8 ranks";

  // One-shot AllReduce moves its buffer into the slot and reads every rank's slot: 4000 + 4 x 4000 bytes at 4 ranks.
  op.type = CollType::kAllReduce;
  std::vector<Step> steps = planPeerSteps(op, 0, 4, limits);
  EXPECT_EQ(movedBytes(steps[0], 4, 4), 20000u);
  PeerStepLimits upTo = limits;
  upTo.oneKernelBytes = 20000;
  EXPECT_TRUE(runsAsOneKernel(steps, 4, 4, upTo));
  upTo.oneKernelBytes = 19999;
  EXPECT_FALSE(runsAsOneKernel(steps, 4, 4, upTo));
  upTo.oneKernelBytes = 0;  // CHORUS_GPU_ONE_KERNEL=0
  EXPECT_FALSE(runsAsOneKernel(steps, 4, 4, upTo));

  PeerStepLimits twoShot = limits;
  twoShot.oneShotBytes = 0;  // two barriers
  EXPECT_FALSE(runsAsOneKernel(planPeerSteps(op, 0, 4, twoShot), 4, 4, twoShot));
  PeerStepLimits smallSlots = limits;
  smallSlots.slotBytes = 1024;  // four steps
  EXPECT_FALSE(runsAsOneKernel(planPeerSteps(op, 0, 4, smallSlots), 4, 4, smallSlots));
}

TEST(GpuPeerSteps, OnlyCollectivesRunOnPeerMemory) {
  EXPECT_TRUE(runsOnPeerMemory(CollType::kAllReduce));
  EXPECT_TRUE(runsOnPeerMemory(CollType::kScatter));
  EXPECT_FALSE(runsOnPeerMemory(CollType::kSend));
  EXPECT_FALSE(runsOnPeerMemory(CollType::kRecv));
  EXPECT_FALSE(runsOnPeerMemory(CollType::kAlltoAllv));
}

}  // namespace
}  // namespace chorus::gpu

// The plans of calls on device memory (algorithms/peer_plan.hpp), every one of the catalogue, run on host memory:
// every rank's steps with slots in host vectors, the moves as copies and the reductions with the host path's own
// functions. Checked: every rank's result against the reference; every rank's plan has the same phases; nothing
// reads or writes outside its buffer or slot; and no rank writes slot bytes that another rank reads or writes between
// the same two barriers (the ranks' streams run concurrently there), so the results cannot depend on how the GPU
// interleaves the ranks. Every algorithm at every rank count from 1 to 64 (the executor's limit), and the selector's
// choices among them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/operation.hpp"
#include "algorithms/peer_plan.hpp"
#include "gpu/one_kernel_fit.hpp"
#include "kernels/reduce.hpp"
#include "tests/support/reference.hpp"
#include "tuner/choice.hpp"

namespace chorus::algo::peer {
namespace {

using chorus::testing::inputValue;
using chorus::testing::mismatches;
using chorus::testing::preMulScalar;
using chorus::testing::Reduced;
using chorus::testing::storeValue;

struct Shape {
  const Algorithm* algorithm;
  DataType type;
  RedOp op;
  size_t count;
  bool inPlace;
  int root;
  int nranks;
  size_t slotBytes;
};

std::string describe(const Shape& s) {
  return std::string(collName(s.algorithm->coll)) + " " + s.algorithm->name + "(" + dataTypeName(s.type) + ", " +
         redOpName(s.op.kind) + ", count " + std::to_string(s.count) + (s.inPlace ? ", in place" : "") + ", root " +
         std::to_string(s.root) + ", " + std::to_string(s.nranks) + " ranks, slot " + std::to_string(s.slotBytes) + ")";
}

// The shape the dispatcher gives the catalogue for `op` (comm/dispatcher.cc, planOnPeerMemory).
CollShape peerShape(const Operation& op, int rank, int nranks, size_t slotBytes, size_t oneShotBytes) {
  CollShape shape{op.type, nranks, rank, op.count, dataTypeSize(op.dtype), op.root};
  shape.memory = Memory::kPeer;
  const bool reduces =
      op.type == CollType::kAllReduce || op.type == CollType::kReduceScatter || op.type == CollType::kReduce;
  shape.peer = {slotBytes, oneShotBytes, inPlace(op, rank, nranks), reduces && op.op.kind == RedOpKind::kPreMulSum};
  return shape;
}

// One rank's buffers, the call it makes and what its receive buffer must hold afterwards.
struct Rank {
  std::vector<unsigned char> send, recv, expected;
  Operation op;
  bool checks = true;  // false where the call leaves recv alone (Reduce and Gather off the root)
  std::vector<unsigned char> slots[2];
  Plan plan;
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
  op.type = s.algorithm->coll;
  op.dtype = s.type;
  op.op = s.op;
  if (s.op.kind == RedOpKind::kPreMulSum) op.op.scalar = preMulScalar(r);
  op.count = c;
  op.root = s.root;
  const Reduced reduced(s.op, s.type, s.nranks);
  switch (op.type) {
    case CollType::kAllReduce:
    case CollType::kReduce:
      k.send.resize(c * e);
      k.recv.resize(c * e, 0xee);
      k.expected = k.recv;
      fillReduce(s.inPlace ? k.recv.data() : k.send.data(), s, r, c);
      op.send = s.inPlace ? k.recv.data() : k.send.data();
      op.recv = k.recv.data();
      if (op.type == CollType::kReduce && r != s.root) {
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
      if (op.type == CollType::kGather && r != s.root) {
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
  for (auto& slot : k.slots) slot.assign(s.slotBytes, 0xdd);
  k.plan = s.algorithm->generatePeer(peerShape(op, r, s.nranks, s.slotBytes, SIZE_MAX));
  return k;
}

// Returns the problem `check` found, if any.
#define CHORUS_RETURN_PROBLEM(check)        \
  do {                                      \
    std::string problem_ = (check);         \
    if (!problem_.empty()) return problem_; \
  } while (0)

struct Access {
  int rank;   // who accesses
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
    const std::vector<Step>& first = ranks_[0].plan.steps;
    for (const Rank& k : ranks_) {
      if (k.plan.steps.size() != first.size()) return "ranks plan different numbers of steps";
      for (size_t i = 0; i < first.size(); ++i)
        if (k.plan.steps[i].phases.size() != first[i].phases.size()) return "ranks plan different phases";
    }
    for (size_t step = 0; step < first.size(); ++step) {
      const int parity = static_cast<int>(step % 2);
      for (size_t phase = 0; phase < first[step].phases.size(); ++phase) {
        if (phase > 0) CHORUS_RETURN_PROBLEM(barrier());
        // Between two barriers the ranks run in any order; here, alternately forwards and backwards.
        for (int i = 0; i < s_.nranks; ++i) {
          const int r = (step + phase) % 2 ? s_.nranks - 1 - i : i;
          std::string failed = runPhase(r, ranks_[r].plan.steps[step].phases[phase], parity);
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
  // The end of a barrier interval: no rank may have written slot bytes another rank touched in it. The accesses of
  // each slot sorted by their start, each compared with those that start before it ends.
  std::string barrier() {
    std::sort(accesses_.begin(), accesses_.end(), [](const Access& a, const Access& b) {
      return std::tie(a.owner, a.parity, a.lo) < std::tie(b.owner, b.parity, b.lo);
    });
    std::string found;
    for (size_t i = 0; i < accesses_.size() && found.empty(); ++i) {
      const Access& a = accesses_[i];
      for (size_t j = i + 1; j < accesses_.size() && found.empty(); ++j) {
        const Access& b = accesses_[j];
        if (b.owner != a.owner || b.parity != a.parity || b.lo >= a.hi) break;
        if (a.rank == b.rank || (!a.write && !b.write)) continue;
        const Access& w = a.write ? a : b;
        const Access& o = a.write ? b : a;
        found = "rank " + std::to_string(w.rank) + " writes bytes " + std::to_string(w.lo) + "-" +
                std::to_string(w.hi) + " of rank " + std::to_string(w.owner) + "'s slot " + std::to_string(w.parity) +
                " while rank " + std::to_string(o.rank) + (o.write ? " writes " : " reads ") + "bytes " +
                std::to_string(o.lo) + "-" + std::to_string(o.hi) + " between the same barriers";
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
        accesses_.push_back({r, ref.rank, parity, ref.offset, ref.offset + bytes, write});
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
  std::vector<Access> accesses_;  // this barrier interval's slot accesses
};

const std::vector<CollType> kCollectives = {CollType::kAllReduce, CollType::kReduceScatter, CollType::kAllGather,
                                            CollType::kAlltoAll,  CollType::kBroadcast,     CollType::kReduce,
                                            CollType::kGather,    CollType::kScatter};

bool reduces(CollType c) {
  return c == CollType::kAllReduce || c == CollType::kReduceScatter || c == CollType::kReduce;
}

std::vector<const Algorithm*> peerAlgorithms() {
  std::vector<const Algorithm*> all;
  for (const Algorithm& a : algorithms())
    if (a.memory == Memory::kPeer) all.push_back(&a);
  return all;
}

TEST(PeerPlanSimulator, EveryCollectiveHasAPeerAlgorithmAndEveryOneACost) {
  for (CollType coll : kCollectives) EXPECT_NE(findAlgorithm(coll, "", Memory::kPeer), nullptr) << collName(coll);
  for (CollType coll : {CollType::kSend, CollType::kRecv, CollType::kAlltoAllv})
    EXPECT_EQ(findAlgorithm(coll, "", Memory::kPeer), nullptr) << collName(coll) << " is staged through host memory";
  for (const Algorithm* a : peerAlgorithms()) {
    EXPECT_TRUE(a->generatePeer && !a->generate && a->cost && a->rankOrder) << a->name;
    CollShape shape{a->coll, 4, 0, 1000, 4};
    shape.memory = Memory::kPeer;
    shape.peer = {1 << 20, 1 << 20};
    const double micros = tuner::predict(*a, shape, CostInputs{});
    EXPECT_GT(micros, 0) << a->name;
    EXPECT_LT(micros, 1e6) << a->name;
  }
}

TEST(PeerPlanSimulator, EveryAlgorithmOnEverySplitIsExactAndRaceFree) {
  int checked = 0;
  for (const Algorithm* a : peerAlgorithms())
    for (int nranks : {1, 2, 3, 5})
      for (size_t count : {size_t{1}, size_t{7}, size_t{100}, size_t{1001}})
        for (size_t slotBytes : {size_t{16} * nranks, size_t{96} * nranks, size_t{4096}})
          for (bool inPlace : {false, true}) {
            if (inPlace && a->coll == CollType::kAlltoAll) continue;
            for (DataType type : {DataType::kFloat32, DataType::kInt8, DataType::kFloat16, DataType::kFloat64})
              for (RedOp op : reduces(a->coll)
                                  ? std::vector<RedOp>{RedOp::sum(), RedOp::avg(), RedOp::preMulSum(1), RedOp::max()}
                                  : std::vector<RedOp>{RedOp::sum()}) {
                if (op.kind == RedOpKind::kAvg && type == DataType::kInt8) continue;  // integer avg truncates
                const Shape s{a, type, op, count, inPlace, nranks - 1, nranks, slotBytes};
                ASSERT_EQ(Simulation(s).run(), "") << describe(s);
                ++checked;
              }
          }
  EXPECT_GT(checked, 3000);
}

// Every rank count the executor takes (its reductions read at most 64 slots), each root, slots of one row and of
// several steps' worth.
TEST(PeerPlanSimulator, EveryAlgorithmAtOneToSixtyFourRanks) {
  int checked = 0;
  for (int nranks = 1; nranks <= 64; ++nranks)
    for (const Algorithm* a : peerAlgorithms())
      for (size_t count : {size_t{5}, size_t{259}})
        for (size_t slotBytes : {size_t{16} * nranks, size_t{1} << 16})
          for (bool inPlace : {false, true}) {
            if (inPlace && a->coll == CollType::kAlltoAll) continue;
            const RedOp op = a->coll == CollType::kAllReduce && inPlace ? RedOp::avg() : RedOp::sum();
            const int root = (nranks * 2 / 3 + static_cast<int>(count)) % nranks;
            const Shape s{a, DataType::kFloat32, op, count, inPlace, root, nranks, slotBytes};
            ASSERT_EQ(Simulation(s).run(), "") << describe(s);
            ++checked;
          }
  EXPECT_GT(checked, 64 * 9 * 6);
}

// The shape of a device AllReduce of `count` floats at `nranks`, as the dispatcher makes it.
CollShape allReduceShape(size_t count, int nranks, size_t slotBytes, size_t oneShotBytes) {
  static std::vector<float> in, out;
  in.resize(count);
  out.resize(count);
  Operation op;
  op.type = CollType::kAllReduce;
  op.count = count;
  op.send = in.data();
  op.recv = out.data();
  return peerShape(op, 0, nranks, slotBytes, oneShotBytes);
}

TEST(PeerPlanSimulator, LargeCallsTakeSeveralStepsAndAllReduceTwoShotHasThreePhases) {
  const Algorithm* oneShot = findAlgorithm(CollType::kAllReduce, "peer_one_shot", Memory::kPeer);
  const Algorithm* twoShot = findAlgorithm(CollType::kAllReduce, "peer_two_shot", Memory::kPeer);
  ASSERT_TRUE(oneShot && twoShot);
  const CollShape shape = allReduceShape(1000, 4, 1024, 4000);  // 256 floats per step
  Plan plan = oneShot->generatePeer(shape);
  ASSERT_EQ(plan.steps.size(), 4u);  // 256 + 256 + 256 + 232
  EXPECT_EQ(plan.steps[0].phases.size(), 2u);
  EXPECT_EQ(barrierCount(plan), 4u);
  plan = twoShot->generatePeer(shape);
  ASSERT_EQ(plan.steps[0].phases.size(), 3u);
  EXPECT_EQ(barrierCount(plan), 8u);
  // Rank 0 reduces the first quarter of each step's 256 floats, on a 16-byte boundary.
  ASSERT_EQ(plan.steps[0].phases[1].combines.size(), 1u);
  EXPECT_EQ(plan.steps[0].phases[1].combines[0].slotOffset, 0u);
  EXPECT_EQ(plan.steps[0].phases[1].combines[0].count, 64u);
}

TEST(PeerPlanSimulator, TheSelectorTakesOneShotUpToItsLimitAndOnlyPeerAlgorithmsForDeviceCalls) {
  tuner::Selector selector;
  const size_t kOneShot = 1 << 20;  // CHORUS_GPU_ONE_SHOT's default
  for (int nranks : {2, 4, 8}) {
    EXPECT_STREQ(tuner::choose(allReduceShape(1000, nranks, 64 << 20, kOneShot), selector)->name, "peer_one_shot");
    EXPECT_STREQ(tuner::choose(allReduceShape(kOneShot / 4 + 1, nranks, 64 << 20, kOneShot), selector)->name,
                 "peer_two_shot")
        << "past CHORUS_GPU_ONE_SHOT";
  }
  // Where the model prices more reads of every rank's slot above a barrier, two-shot wins below the limit too.
  EXPECT_STREQ(tuner::choose(allReduceShape(kOneShot / 4, 64, 64 << 20, kOneShot), selector)->name, "peer_two_shot");
  for (CollType coll : kCollectives) {
    CollShape device{coll, 4, 1, 1000, 4, 2};
    device.memory = Memory::kPeer;
    device.peer = {64 << 20, kOneShot};
    const Algorithm* a = tuner::choose(device, selector);
    ASSERT_NE(a, nullptr) << collName(coll);
    EXPECT_EQ(a->memory, Memory::kPeer) << collName(coll);
    const Algorithm* host = tuner::choose(CollShape{coll, 4, 1, 1000, 4, 2}, selector);
    ASSERT_NE(host, nullptr) << collName(coll);
    EXPECT_EQ(host->memory, Memory::kHost) << collName(coll);
  }
  // Deterministic mode takes them (they reduce in rank order); CHORUS_ALGO forces one, and host names pass them by.
  selector.deterministic = true;
  EXPECT_STREQ(tuner::choose(allReduceShape(1000, 4, 64 << 20, kOneShot), selector)->name, "peer_one_shot");
  ASSERT_TRUE(tuner::parseAlgoRules("ring,allreduce:peer_two_shot", &selector.rules).isOk());
  EXPECT_STREQ(tuner::choose(allReduceShape(1000, 4, 64 << 20, kOneShot), selector)->name, "peer_two_shot");
  selector.rules.clear();
  ASSERT_TRUE(tuner::parseAlgoRules("ring", &selector.rules).isOk());
  EXPECT_STREQ(tuner::choose(allReduceShape(1000, 4, 64 << 20, kOneShot), selector)->name, "peer_one_shot");
}

TEST(PeerPlanSimulator, SmallCallsOfUpToEightRanksRunAsOneKernel) {
  std::vector<float> in(8 * 1000), out(8 * 1000);
  Operation op;
  op.dtype = DataType::kFloat32;
  op.count = 1000;
  op.send = in.data();
  op.recv = out.data();
  const size_t kSlot = 64 << 20, kOneShot = 1 << 20, kOneKernel = 4 << 20;  // the settings' defaults
  const tuner::Selector selector;
  auto planOf = [&](int nranks) {
    const CollShape shape = peerShape(op, 0, nranks, kSlot, kOneShot);
    return tuner::choose(shape, selector)->generatePeer(shape);
  };
  for (CollType coll : kCollectives)
    for (int nranks : {1, 2, 8}) {
      op.type = coll;
      EXPECT_TRUE(gpu::runsAsOneKernel(planOf(nranks), nranks, 4, kOneKernel))
          << collName(coll) << " at " << nranks << " ranks";
    }
  op.type = CollType::kAlltoAll;
  EXPECT_FALSE(gpu::runsAsOneKernel(planOf(9), 9, 4, kOneKernel)) << "past the kernel's 8 ranks";

  // One-shot AllReduce moves its buffer into the slot and reads every rank's slot: 4000 + 4 x 4000 bytes at 4 ranks.
  op.type = CollType::kAllReduce;
  const Plan plan = planOf(4);
  EXPECT_EQ(movedBytes(plan.steps[0], 4, 4), 20000u);
  EXPECT_TRUE(gpu::runsAsOneKernel(plan, 4, 4, 20000));
  EXPECT_FALSE(gpu::runsAsOneKernel(plan, 4, 4, 19999));
  EXPECT_FALSE(gpu::runsAsOneKernel(plan, 4, 4, 0));  // CHORUS_GPU_ONE_KERNEL=0

  const CollShape shape = peerShape(op, 0, 4, kSlot, kOneShot);
  const Algorithm* twoShot = findAlgorithm(CollType::kAllReduce, "peer_two_shot", Memory::kPeer);
  EXPECT_FALSE(gpu::runsAsOneKernel(twoShot->generatePeer(shape), 4, 4, kOneKernel)) << "two barriers";
  const Plan steps =
      tuner::choose(peerShape(op, 0, 4, 1024, kOneShot), selector)->generatePeer(peerShape(op, 0, 4, 1024, kOneShot));
  EXPECT_FALSE(gpu::runsAsOneKernel(steps, 4, 4, kOneKernel)) << "four steps";
}

}  // namespace
}  // namespace chorus::algo::peer

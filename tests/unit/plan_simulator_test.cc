// Tier 0: the plan simulator. Every registered algorithm runs for 1..64 ranks and sizes 0, 1, odd, prime and
// larger, all ranks in this one thread over small in-memory FIFOs (4 KiB, so chunks wrap and pipelines stall).
// A round in which no rank moves a byte while some rank is unfinished is a deadlock.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "algorithms/plan.hpp"
#include "engine/execution.hpp"
#include "transports/fifo_connection.hpp"

namespace chorus::algo {
namespace {

constexpr size_t kFifoBytes = 4096;

int32_t value(int rank, size_t index) { return static_cast<int32_t>(rank * 100003 + static_cast<int>(index)); }

// Full mesh of FIFO connections between n simulated ranks (plus each rank to itself).
class Mesh {
 public:
  explicit Mesh(int n) : n_(n), conns_(n * n) {
    for (int a = 0; a < n; ++a) {
      for (int b = a; b < n; ++b) {
        const size_t one = transport::Fifo::bytesFor(kFifoBytes);
        std::shared_ptr<void> memory(aligned_alloc(64, 2 * one), free);
        auto* base = static_cast<std::byte*>(memory.get());
        transport::Fifo ab(base, kFifoBytes, true), ba(base + one, kFifoBytes, true);
        if (a == b) {
          conns_[a * n + a] = std::make_unique<transport::FifoConnection>(memory, ab, ab, a, 0, "sim");
          continue;
        }
        conns_[a * n + b] = std::make_unique<transport::FifoConnection>(memory, ab, ba, b, 0, "sim");
        conns_[b * n + a] = std::make_unique<transport::FifoConnection>(memory, ba, ab, a, 0, "sim");
      }
    }
  }
  transport::Connection* get(int from, int to) { return conns_[from * n_ + to].get(); }

 private:
  int n_;
  std::vector<std::unique_ptr<transport::Connection>> conns_;
};

// Runs every rank's execution in turn until all finish; returns "" or a deadlock/error description.
std::string simulate(std::vector<std::unique_ptr<engine::Execution>>& execs) {
  while (true) {
    bool moved = false, done = true;
    for (auto& e : execs) {
      if (e->done()) continue;
      Status st = e->advance(&moved);
      if (!st.isOk()) return st.message();
      done = done && e->done();
    }
    if (done) return "";
    if (!moved) {
      std::string who;
      for (auto& e : execs)
        if (!e->done()) who += " rank " + std::to_string(e->rank()) + " waits for " + e->pendingPeers() + ";";
      return "deadlock:" + who;
    }
  }
}

struct RankBuffers {
  std::vector<int32_t> send, recv, scratch;
};

// AlltoAllv traffic from s to d, in elements.
size_t amount(int s, int d, size_t count) { return ((static_cast<size_t>(s + d) + count) % 3) * count; }

CollShape shapeFor(CollType coll, int n, int r, size_t count) {
  CollShape s{coll, n, r, count, sizeof(int32_t), static_cast<int>(count % n), nullptr, nullptr};
  if (coll == CollType::kAlltoAllv) {
    auto v = std::make_shared<algo::VariableLayout>();
    size_t so = 0, ro = 0;
    for (int k = 0; k < n; ++k) {
      v->sendCounts.push_back(amount(r, k, count));
      v->sendDispls.push_back(so);
      so += v->sendCounts.back();
      v->recvCounts.push_back(amount(k, r, count));
      v->recvDispls.push_back(ro);
      ro += v->recvCounts.back();
    }
    s.variable = std::move(v);
  }
  return s;
}

// Input sizes and the expected output of rank r, in elements.
void layout(const CollShape& s, size_t* sendElems, size_t* recvElems) {
  const size_t n = static_cast<size_t>(s.nranks), c = s.count;
  switch (s.type) {
    case CollType::kReduceScatter:
      *sendElems = n * c;
      *recvElems = c;
      break;
    case CollType::kAllGather:
    case CollType::kGather:
      *sendElems = c;
      *recvElems = n * c;
      break;
    case CollType::kAlltoAll:
      *sendElems = n * c;
      *recvElems = n * c;
      break;
    case CollType::kScatter:
      *sendElems = n * c;
      *recvElems = c;
      break;
    case CollType::kAlltoAllv:
      *sendElems = s.variable->sendDispls.back() + s.variable->sendCounts.back();
      *recvElems = s.variable->recvDispls.back() + s.variable->recvCounts.back();
      break;
    default:
      *sendElems = c;
      *recvElems = c;
      break;
  }
}

std::vector<int32_t> expected(const CollShape& s) {
  const int n = s.nranks, r = s.rank, root = s.root;
  const size_t c = s.count;
  size_t sendElems, recvElems;
  layout(s, &sendElems, &recvElems);
  std::vector<int32_t> out(recvElems, -1);  // -1: untouched
  auto sum = [&](size_t i) {
    int32_t acc = 0;
    for (int k = 0; k < n; ++k) acc += value(k, i);
    return acc;
  };
  switch (s.type) {
    case CollType::kAllReduce:
      for (size_t i = 0; i < c; ++i) out[i] = sum(i);
      break;
    case CollType::kReduce:
      if (r == root)
        for (size_t i = 0; i < c; ++i) out[i] = sum(i);
      break;
    case CollType::kReduceScatter:
      for (size_t i = 0; i < c; ++i) out[i] = sum(r * c + i);
      break;
    case CollType::kAllGather:
      for (int k = 0; k < n; ++k)
        for (size_t i = 0; i < c; ++i) out[k * c + i] = value(k, i);
      break;
    case CollType::kGather:
      if (r == root)
        for (int k = 0; k < n; ++k)
          for (size_t i = 0; i < c; ++i) out[k * c + i] = value(k, i);
      break;
    case CollType::kAlltoAll:
      for (int k = 0; k < n; ++k)
        for (size_t i = 0; i < c; ++i) out[k * c + i] = value(k, r * c + i);
      break;
    case CollType::kAlltoAllv:
      for (int k = 0; k < n; ++k) {
        size_t at = 0;
        for (int d = 0; d < r; ++d) at += amount(k, d, c);
        for (size_t i = 0; i < s.variable->recvCounts[k]; ++i) out[s.variable->recvDispls[k] + i] = value(k, at + i);
      }
      break;
    case CollType::kBroadcast:
      for (size_t i = 0; i < c; ++i) out[i] = value(root, i);
      break;
    case CollType::kScatter:
      for (size_t i = 0; i < c; ++i) out[i] = value(root, r * c + i);
      break;
    default:
      break;
  }
  return out;
}

// Runs algorithm `a` on n simulated ranks (on `hosts`, or one host when null); "" or what went wrong.
// The simulator runs every local step after the peers' steps: a plan that leans on a local step running first fails.
engine::ExecutionSettings everyLocalLast() {
  engine::ExecutionSettings settings;
  settings.largeLocal = 0;
  return settings;
}

std::string simulateAlgorithm(const Algorithm& a, int n, size_t count,
                              const std::shared_ptr<const std::vector<int>>& hosts) {
  Mesh mesh(n);
  std::vector<RankBuffers> bufs(n);
  std::vector<Plan> plans(n);
  std::vector<std::unique_ptr<engine::Execution>> execs;
  for (int r = 0; r < n; ++r) {
    CollShape shape = shapeFor(a.coll, n, r, count);
    shape.hostOfRank = hosts;
    size_t sendElems, recvElems;
    layout(shape, &sendElems, &recvElems);
    bufs[r].send.resize(sendElems);
    for (size_t i = 0; i < sendElems; ++i) bufs[r].send[i] = value(r, i);
    bufs[r].recv.assign(recvElems, -1);
    plans[r] = a.generate(shape);
    bufs[r].scratch.resize(plans[r].scratchBytes / sizeof(int32_t) + 1);
    execs.push_back(std::make_unique<engine::Execution>(
        r, [&mesh, r](int peer) { return mesh.get(r, peer); }, nullptr, everyLocalLast()));
    engine::Binding b{bufs[r].send.data(), bufs[r].recv.data(), bufs[r].scratch.data(),
                      kernels::reduceFunction(DataType::kInt32, RedOpKind::kSum), sizeof(int32_t)};
    execs.back()->bind(plans[r], b, {a.name, 0});
  }
  const std::string where =
      std::string(collName(a.coll)) + "/" + a.name + " n=" + std::to_string(n) + " count=" + std::to_string(count);
  std::string error = simulate(execs);
  if (!error.empty()) return where + ": " + error;
  for (int r = 0; r < n; ++r) {
    if (bufs[r].recv != expected(shapeFor(a.coll, n, r, count)))
      return where + ": wrong result on rank " + std::to_string(r);
  }
  return "";
}

// Algorithm `a` in place, as NCCL defines it: AllReduce, Broadcast and Reduce on one buffer, ReduceScatter's output at
// block r of its input, AllGather's input at block r of its output. "" or what went wrong. Other collectives: "".
std::string simulateInPlace(const Algorithm& a, int n, size_t count) {
  const CollType t = a.coll;
  if (t != CollType::kAllReduce && t != CollType::kBroadcast && t != CollType::kReduce &&
      t != CollType::kReduceScatter && t != CollType::kAllGather)
    return "";
  Mesh mesh(n);
  std::vector<std::vector<int32_t>> bufs(n);
  std::vector<std::vector<int32_t>> scratch(n);
  std::vector<Plan> plans(n);
  std::vector<std::unique_ptr<engine::Execution>> execs;
  const bool blocks = t == CollType::kReduceScatter || t == CollType::kAllGather;
  for (int r = 0; r < n; ++r) {
    const CollShape shape = shapeFor(t, n, r, count);
    bufs[r].assign(blocks ? n * count : count, -1);
    const size_t inputAt = t == CollType::kAllGather ? r * count : 0;
    const size_t inputElems = t == CollType::kReduceScatter ? n * count : count;
    for (size_t i = 0; i < inputElems; ++i) bufs[r][inputAt + i] = value(r, i);
    plans[r] = a.generate(shape);
    scratch[r].resize(plans[r].scratchBytes / sizeof(int32_t) + 1);
    execs.push_back(std::make_unique<engine::Execution>(
        r, [&mesh, r](int peer) { return mesh.get(r, peer); }, nullptr, everyLocalLast()));
    int32_t* recv = bufs[r].data() + (t == CollType::kReduceScatter ? r * count : 0);
    const int32_t* send = bufs[r].data() + inputAt;
    engine::Binding b{send, recv, scratch[r].data(), kernels::reduceFunction(DataType::kInt32, RedOpKind::kSum),
                      sizeof(int32_t)};
    execs.back()->bind(plans[r], b, {a.name, 0});
  }
  const std::string where =
      std::string(collName(t)) + "/" + a.name + " in place n=" + std::to_string(n) + " count=" + std::to_string(count);
  std::string error = simulate(execs);
  if (!error.empty()) return where + ": " + error;
  for (int r = 0; r < n; ++r) {
    const CollShape shape = shapeFor(t, n, r, count);
    if (t == CollType::kReduce && r != shape.root) continue;  // a non-root's buffer holds nothing defined
    const std::vector<int32_t> want = expected(shape);
    const size_t at = t == CollType::kReduceScatter ? r * count : 0;
    if (!std::equal(want.begin(), want.end(), bufs[r].begin() + static_cast<ptrdiff_t>(at)))
      return where + ": wrong result on rank " + std::to_string(r);
  }
  return "";
}

class PlanSimulator : public ::testing::TestWithParam<int> {};

// In place, a step that overwrites input another step still reads must say so (Step::after); every local step runs
// after the peers' steps here, so a plan that leaned on local copies going first fails.
TEST_P(PlanSimulator, InPlaceCallsDeliverTheExactResult) {
  const int n = GetParam();
  for (const Algorithm& a : algorithms()) {
    if (a.memory != Memory::kHost) continue;  // peer_plan_simulator_test runs the plans of device memory
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{13}, size_t{1000}}) {
      ASSERT_EQ(simulateInPlace(a, n, count), "");
    }
  }
}

TEST_P(PlanSimulator, EveryAlgorithmDeliversTheExactResultWithoutDeadlock) {
  const int n = GetParam();
  for (const Algorithm& a : algorithms()) {
    if (a.memory != Memory::kHost) continue;  // peer_plan_simulator_test runs the plans of device memory
    if (a.coll == CollType::kSend || a.coll == CollType::kRecv) continue;
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{13}, size_t{1000}}) {
      ASSERT_EQ(simulateAlgorithm(a, n, count, nullptr), "");
    }
  }
}

// Hierarchical algorithms on every split of n ranks into H >= 2 hosts of L >= 2: ranks in blocks per host, and
// dealt round-robin (a host's ranks are not contiguous).
TEST_P(PlanSimulator, HierarchicalAlgorithmsOnEveryHostSplit) {
  const int n = GetParam();
  for (int hosts = 2; hosts <= n / 2; ++hosts) {
    if (n % hosts != 0) continue;
    const int perHost = n / hosts;
    for (bool blocked : {true, false}) {
      auto layout = std::make_shared<std::vector<int>>(n);
      for (int r = 0; r < n; ++r) (*layout)[r] = blocked ? r / perHost : r % hosts;
      for (const Algorithm& a : algorithms()) {
        if (a.memory != Memory::kHost) continue;  // peer_plan_simulator_test runs the plans of device memory
        CollShape probe = shapeFor(a.coll, n, 0, 1);
        probe.hostOfRank = layout;
        if (!a.applies || !a.appliesTo(probe)) continue;
        // The last count (10 MB of int32, odd) is large enough for hierarchical AllReduce to pipeline pieces.
        for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{1000}, size_t{2621447}}) {
          if (count > 1000 && (n > 6 || a.coll != CollType::kAllReduce)) continue;
          ASSERT_EQ(simulateAlgorithm(a, n, count, layout), "")
              << hosts << " hosts, " << (blocked ? "blocked" : "dealt");
        }
      }
    }
  }
}

TEST_P(PlanSimulator, SendRecvRingInOneGroup) {
  const int n = GetParam();
  const Algorithm* send = findAlgorithm(CollType::kSend);
  const Algorithm* recv = findAlgorithm(CollType::kRecv);
  ASSERT_TRUE(send && recv);
  Mesh mesh(n);
  const size_t count = 999;
  std::vector<RankBuffers> bufs(n);
  std::vector<std::unique_ptr<engine::Execution>> execs;
  for (int r = 0; r < n; ++r) {
    bufs[r].send.resize(count);
    for (size_t i = 0; i < count; ++i) bufs[r].send[i] = value(r, i);
    bufs[r].recv.assign(count, -1);
    execs.push_back(std::make_unique<engine::Execution>(
        r, [&mesh, r](int peer) { return mesh.get(r, peer); }, nullptr));
    engine::Binding b{bufs[r].send.data(), bufs[r].recv.data(), nullptr, nullptr, sizeof(int32_t)};
    const Plan sendPlan = send->generate({CollType::kSend, n, r, count, 4, (r + 1) % n, nullptr, nullptr});
    const Plan recvPlan = recv->generate({CollType::kRecv, n, r, count, 4, (r - 1 + n) % n, nullptr, nullptr});
    const engine::BoundPlan group[] = {{&sendPlan, b}, {&recvPlan, b}};
    execs.back()->bind(group, {"group", 0});
  }
  ASSERT_EQ(simulate(execs), "");
  for (int r = 0; r < n; ++r) EXPECT_EQ(bufs[r].recv[count - 1], value((r - 1 + n) % n, count - 1));
}

std::vector<int> rankCounts(int from, int to) {
  std::vector<int> v;
  for (int n = from; n <= to; ++n) v.push_back(n);
  return v;
}
std::string ranksName(const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; }

// 17 to 64 ranks take the code paths that 1 to 16 ranks already take: they are the `slow` variant, which the sanitizer
// runs leave out (tests/unit/CMakeLists.txt).
INSTANTIATE_TEST_SUITE_P(Ranks, PlanSimulator, ::testing::ValuesIn(rankCounts(1, 16)), ranksName);
INSTANTIATE_TEST_SUITE_P(ManyRanks, PlanSimulator, ::testing::ValuesIn(rankCounts(17, 64)), ranksName);

TEST(PlanCatalogue, EveryCollectiveHasAnAlgorithm) {
  for (CollType c : {CollType::kAllReduce, CollType::kReduceScatter, CollType::kAllGather, CollType::kAlltoAll,
                     CollType::kAlltoAllv, CollType::kBroadcast, CollType::kReduce, CollType::kGather,
                     CollType::kScatter, CollType::kSend, CollType::kRecv}) {
    EXPECT_NE(findAlgorithm(c), nullptr) << collName(c);
  }
}

}  // namespace
}  // namespace chorus::algo

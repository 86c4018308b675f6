// Tier 1: N ranks as threads of this process. Every collective x dtype x op x in/out-of-place x size x world size.
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <thread>

#include "chorus/communicator.hpp"
#include "core/settings.hpp"
#include "tests/support/collective_case.hpp"

namespace chorus::testing {
namespace {

// Runs `body(comm, rank)` on one thread per rank; returns each rank's error text ("" when all went well).
std::vector<std::string> onEveryRank(std::vector<std::unique_ptr<Communicator>>& comms,
                                     const std::function<std::string(Communicator&, int)>& body) {
  std::vector<std::string> errors(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] { errors[r] = body(*comms[r], static_cast<int>(r)); });
  }
  for (auto& t : threads) t.join();
  return errors;
}

// Sizes: empty, one element, odd, prime, and >= 1 MiB of data per rank buffer.
std::vector<size_t> sizesFor(DataType type) { return {0, 1, 33, 1021, (size_t{1} << 20) / dataTypeSize(type) + 5}; }

std::vector<Case> casesFor(algo::CollType coll, int nranks) {
  std::vector<Case> cases;
  for (DataType type : allDataTypes()) {
    std::vector<RedOp> ops = usesOp(coll) ? allOps() : std::vector<RedOp>{RedOp::sum()};
    for (const RedOp& op : ops) {
      for (bool inPlace : {false, true}) {
        if (inPlace && !supportsInPlace(coll)) continue;
        for (size_t count : sizesFor(type)) {
          // Per-peer collectives multiply the count by the rank count; keep their large case near 1 MiB.
          if (count > 2000 && (coll == algo::CollType::kAlltoAll || coll == algo::CollType::kAlltoAllv ||
                               coll == algo::CollType::kAllGather || coll == algo::CollType::kGather ||
                               coll == algo::CollType::kScatter || coll == algo::CollType::kReduceScatter)) {
            count = count / static_cast<size_t>(nranks) + 1;
          }
          cases.push_back({coll, type, op, inPlace, count, static_cast<int>(count % nranks)});
        }
      }
    }
  }
  return cases;
}

// Runs `cases` on every rank, one thread each; a failing rank aborts its communicator so the others stop at once
// instead of waiting for the timeout. Returns one message per rank ("" when it passed).
std::vector<std::string> runOnThreads(std::vector<std::unique_ptr<Communicator>>& comms,
                                      const std::vector<Case>& cases) {
  std::vector<std::string> failures(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      for (const Case& c : cases) {
        std::string error = runCase(*comms[r], c);
        if (!error.empty()) {
          failures[r] = error;
          comms[r]->abort();
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  return failures;
}

class ThreadCollectives : public ::testing::TestWithParam<std::tuple<algo::CollType, int>> {};

TEST_P(ThreadCollectives, EveryTypeOpSizeAndPlacement) {
  const auto [coll, nranks] = GetParam();
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(nranks, &comms).isOk());
  const std::vector<Case> cases = casesFor(coll, nranks);
  for (const auto& f : runOnThreads(comms, cases)) EXPECT_EQ(f, "");
}

std::string name(const ::testing::TestParamInfo<ThreadCollectives::ParamType>& info) {
  return std::string(algo::collName(std::get<0>(info.param))) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Loopback, ThreadCollectives,
                         ::testing::Combine(::testing::ValuesIn(testedCollectives()),
                                            ::testing::Values(1, 2, 3, 4, 7, 8)),
                         name);

// Sets environment variables for one test and restores the settings afterwards.
class ScopedSettings {
 public:
  explicit ScopedSettings(std::vector<std::pair<std::string, std::string>> vars) : vars_(std::move(vars)) {
    for (auto& [k, v] : vars_) setenv(k.c_str(), v.c_str(), 1);
    reloadSettings();
  }
  ~ScopedSettings() {
    for (auto& [k, v] : vars_) unsetenv(k.c_str());
    reloadSettings();
  }

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
};

// Single-copy transfers (the receiver copies straight from the sender's buffer) from 4 KiB on, for every
// collective, with pipelined ring steps, reductions through the bounce buffer and in-place layouts.
TEST(ThreadCommunicator, DirectTransfersGiveTheSameResults) {
  ScopedSettings direct(std::vector<std::pair<std::string, std::string>>{{"CHORUS_DIRECT_THRESHOLD", "4096"}});
  for (int nranks : {2, 3, 4}) {
    std::vector<std::unique_ptr<Communicator>> comms;
    ASSERT_TRUE(Communicator::createLocal(nranks, &comms).isOk());
    std::vector<Case> cases;
    for (algo::CollType coll : testedCollectives()) {
      for (DataType type : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64}) {
        for (RedOp op : {RedOp::sum(), RedOp::avg(), RedOp::max()}) {
          if (!usesOp(coll) && op.kind != RedOpKind::kSum) continue;
          for (bool inPlace : {false, true}) {
            if (inPlace && !supportsInPlace(coll)) continue;
            for (size_t count : {size_t{5000}, size_t{300001}}) cases.push_back({coll, type, op, inPlace, count, 1});
          }
        }
      }
    }
    for (const auto& f : runOnThreads(comms, cases)) EXPECT_EQ(f, "");
  }
}

// The host algorithms of the collectives that have several (as indices into algo::algorithms()), each forced
// through CHORUS_ALGO below.
std::vector<size_t> forcedHostAlgorithms() {
  std::vector<size_t> forced;
  for (size_t i = 0; i < algo::algorithms().size(); ++i) {
    const algo::Algorithm& a = algo::algorithms()[i];
    if (a.memory != algo::Memory::kHost) continue;  // device memory: tests/gpu
    if (a.coll != algo::CollType::kAllReduce && a.coll != algo::CollType::kAllGather &&
        a.coll != algo::CollType::kReduceScatter && a.coll != algo::CollType::kBroadcast &&
        a.coll != algo::CollType::kReduce && a.coll != algo::CollType::kAlltoAll) {
      continue;
    }
    if (a.applies) continue;  // hierarchical ones need several hosts: collectives_process_test runs them
    forced.push_back(i);
  }
  return forced;
}

TEST(ThreadCommunicator, SeventeenAlgorithmsAreForced) {
  // 5 AllReduce, 3 AllGather, 3 ReduceScatter, 2 Broadcast, 2 Reduce, 2 AlltoAll
  EXPECT_GE(forcedHostAlgorithms().size(), 17u);
}

// Each such algorithm, forced, over the whole type x op x size table: a test per algorithm, so that a parallel run
// spreads them over its workers.
class ForcedAlgorithm : public ::testing::TestWithParam<size_t> {};

TEST_P(ForcedAlgorithm, GivesTheSameResults) {
  const algo::Algorithm& forced = algo::algorithms()[GetParam()];
  ScopedSettings settings(std::vector<std::pair<std::string, std::string>>{{"CHORUS_ALGO", forced.name}});
  for (int nranks : {3, 4}) {
    std::vector<std::unique_ptr<Communicator>> comms;
    ASSERT_TRUE(Communicator::createLocal(nranks, &comms).isOk());
    for (const auto& f : runOnThreads(comms, casesFor(forced.coll, nranks))) EXPECT_EQ(f, "") << nranks << " ranks";
  }
}

// AllReduce_ring, AlltoAll_bruck, ...: gtest names take letters, digits and underscores only.
std::string forcedName(const ::testing::TestParamInfo<size_t>& info) {
  const algo::Algorithm& a = algo::algorithms()[info.param];
  std::string name = std::string(algo::collName(a.coll)) + "_" + a.name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(ThreadCommunicator, ForcedAlgorithm, ::testing::ValuesIn(forcedHostAlgorithms()), forcedName);

TEST(ThreadCommunicator, AsyncRequestsCompleteInOrder) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(3, &comms).isOk());
  auto errors = onEveryRank(comms, [](Communicator& comm, int r) -> std::string {
    std::vector<float> a(1000, 1.0f), b(1000, static_cast<float>(r));
    Request ra = comm.allReduceAsync(a.data(), a.data(), a.size(), DataType::kFloat32, RedOp::sum());
    Request rb = comm.broadcastAsync(b.data(), b.data(), b.size(), DataType::kFloat32, 2);
    Status sa = ra.wait(), sb = rb.wait();
    if (!sa.isOk() || !sb.isOk()) return sa.message() + sb.message();
    if (a[999] != 3.0f || b[0] != 2.0f) return "wrong async result";
    return "";
  });
  for (auto& e : errors) EXPECT_EQ(e, "");
}

// The call as data: run() and submit() take what the typed methods fill in, and check it as they do.
TEST(ThreadCommunicator, RunAndSubmitTakeTheCallAsData) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(3, &comms).isOk());
  auto errors = onEveryRank(comms, [](Communicator& comm, int r) -> std::string {
    std::vector<int32_t> v(10, r + 1), sum(10, 0);
    Status st =
        comm.run(CollArgs(Collective::kAllReduce, v.data(), sum.data(), v.size(), DataType::kInt32, RedOp::sum()));
    if (!st.isOk() || sum[9] != 6) return "run AllReduce: " + st.message();
    // AlltoAllv: rank r sends q + 1 elements to each rank q, its counts gone before the call runs.
    std::vector<int32_t> out(6, r), in(3 * (r + 1), -1);
    Request req;
    {
      std::vector<size_t> sendCounts{1, 2, 3}, sendDispls{0, 1, 3}, recvCounts(3, r + 1), recvDispls(3);
      for (int q = 0; q < 3; ++q) recvDispls[q] = static_cast<size_t>(q * (r + 1));
      req = comm.submit(CollArgs::alltoAllv(out.data(), sendCounts.data(), sendDispls.data(), in.data(),
                                            recvCounts.data(), recvDispls.data(), DataType::kInt32));
    }
    st = req.wait();
    if (!st.isOk()) return "submit AlltoAllv: " + st.message();
    for (int q = 0; q < 3; ++q)
      for (int i = 0; i <= r; ++i)
        if (in[q * (r + 1) + i] != q) return "AlltoAllv: wrong element from rank " + std::to_string(q);
    st = comm.run(CollArgs(static_cast<Collective>(99), v.data(), sum.data(), 1, DataType::kInt32));
    if (st.code() != ErrorCode::kInvalidArgument || st.message().find("unknown collective 99") == std::string::npos)
      return "an unknown collective: " + st.message();
    st = comm.submit(CollArgs(Collective::kAlltoAllv, out.data(), in.data(), 0, DataType::kInt32)).wait();
    if (st.code() != ErrorCode::kInvalidArgument) return "AlltoAllv without counts: " + st.message();
    return "";
  });
  for (auto& e : errors) EXPECT_EQ(e, "");
}

TEST(ThreadCommunicator, SplitByParity) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(5, &comms).isOk());
  auto errors = onEveryRank(comms, [](Communicator& comm, int r) -> std::string {
    std::unique_ptr<Communicator> child;
    // Rank 4 opts out; the others split by parity, ordered by descending old rank.
    Status st = comm.split(r == 4 ? -1 : r % 2, -r, &child);
    if (!st.isOk()) return st.message();
    if (r == 4) return child ? "opted-out rank got a communicator" : "";
    if (!child || child->size() != 2 || child->rank() != (r < 2 ? 1 : 0)) return "wrong child rank/size";
    int32_t v = r, sum = 0;
    st = child->allReduce(&v, &sum, 1, DataType::kInt32, RedOp::sum());
    if (!st.isOk() || sum != (r % 2 == 0 ? 2 : 4)) return "wrong sum in child: " + std::to_string(sum);
    return "";
  });
  for (auto& e : errors) EXPECT_EQ(e, "");
}

TEST(ThreadCommunicator, GroupedCallsFromOneThreadDriveAllRanks) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(4, &comms).isOk());
  std::vector<std::vector<double>> data(4, std::vector<double>(100));
  for (int r = 0; r < 4; ++r) std::fill(data[r].begin(), data[r].end(), r + 1.0);
  ASSERT_TRUE(groupStart().isOk());
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(comms[r]->allReduce(data[r].data(), data[r].data(), 100, DataType::kFloat64, RedOp::sum()).isOk());
  }
  ASSERT_TRUE(groupEnd().isOk());
  for (int r = 0; r < 4; ++r) EXPECT_EQ(data[r][50], 10.0);
}

TEST(ThreadCommunicator, BadArgumentsAreRejected) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(1, &comms).isOk());
  Communicator& c = *comms[0];
  float x = 0;
  EXPECT_EQ(c.allReduce(nullptr, &x, 1, DataType::kFloat32, RedOp::sum()).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.allReduce(&x, &x, 1, static_cast<DataType>(42), RedOp::sum()).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.allReduce(&x, &x, 1, DataType::kFloat32, RedOp{static_cast<RedOpKind>(9), 1}).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.broadcast(&x, &x, 1, DataType::kFloat32, 3).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.send(&x, 1, DataType::kFloat32, -1).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(c.allReduce(nullptr, nullptr, 0, DataType::kFloat32, RedOp::sum()).isOk());  // count 0: no-op
  std::unique_ptr<Communicator> none;
  UniqueId id;
  EXPECT_EQ(Communicator::create(id, 2, 5, &none).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Communicator::create(id, 2, 0, &none).code(), ErrorCode::kInvalidArgument);  // not a chorus id
}

// A repeated call's arguments are checked once (CallValidator); any argument that differs is checked again, and
// a call that failed its checks is not taken for one that passed.
TEST(ThreadCommunicator, ArgumentsChangedAfterARepeatedCallAreChecked) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(1, &comms).isOk());
  Communicator& c = *comms[0];
  float x = 1, y = 0;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.broadcast(&x, &y, 1, DataType::kFloat32, 0).isOk());
  EXPECT_EQ(c.broadcast(&x, &y, 1, DataType::kFloat32, 1).code(), ErrorCode::kInvalidArgument);  // root
  EXPECT_EQ(c.broadcast(nullptr, &y, 1, DataType::kFloat32, 0).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.broadcast(&x, &y, 1, static_cast<DataType>(42), 0).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.broadcast(&x, &y, SIZE_MAX / 2, DataType::kFloat32, 0).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.allReduce(&x, &y, 1, DataType::kFloat32, RedOp{static_cast<RedOpKind>(9), 1}).code(),
            ErrorCode::kInvalidArgument);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(c.broadcast(&x, &y, 1, DataType::kFloat32, 1).code(), ErrorCode::kInvalidArgument);
  y = 0;
  ASSERT_TRUE(c.broadcast(&x, &y, 1, DataType::kFloat32, 0).isOk());
  EXPECT_EQ(y, 1.0f);
}

// A call that repeats the last one on other buffers (a pool, fresh activations) skips the checks that do not depend
// on them, but its buffers are still checked: a null one, or one whose end would wrap around the address space, is
// refused and the next good call runs on its own buffers.
TEST(ThreadCommunicator, ARepeatedCallOnOtherBuffersChecksThem) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(1, &comms).isOk());
  Communicator& c = *comms[0];
  std::vector<float> inputs(8), outputs(8, 0.0f);
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i] = static_cast<float>(i + 1);
    ASSERT_TRUE(c.broadcast(&inputs[i], &outputs[i], 1, DataType::kFloat32, 0).isOk());
    EXPECT_EQ(outputs[i], inputs[i]);
  }
  void* const top = reinterpret_cast<void*>(UINTPTR_MAX - 7);  // 8 bytes below the end: 4 floats wrap around
  float four[4] = {1, 2, 3, 4}, got[4] = {};
  ASSERT_TRUE(c.broadcast(four, got, 4, DataType::kFloat32, 0).isOk());
  EXPECT_EQ(c.broadcast(four, top, 4, DataType::kFloat32, 0).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.broadcast(top, got, 4, DataType::kFloat32, 0).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.broadcast(four, nullptr, 4, DataType::kFloat32, 0).code(), ErrorCode::kInvalidArgument);
  float other[4] = {5, 6, 7, 8};
  ASSERT_TRUE(c.broadcast(other, got, 4, DataType::kFloat32, 0).isOk());
  EXPECT_EQ(got[3], 8.0f);
  EXPECT_EQ(c.allReduce(other, nullptr, 4, DataType::kFloat32, RedOp::sum()).code(), ErrorCode::kInvalidArgument);
  float sum[4] = {};
  ASSERT_TRUE(c.allReduce(four, sum, 4, DataType::kFloat32, RedOp::sum()).isOk());
  ASSERT_TRUE(c.allReduce(other, sum, 4, DataType::kFloat32, RedOp::sum()).isOk());
  EXPECT_EQ(sum[0], 5.0f);
}

// A call that repeats the last one goes from the gate straight to its bound steps, but never past a group: inside
// one it is deferred to groupEnd() like any other call, and it runs there.
TEST(ThreadCommunicator, ARepeatedCallInsideAGroupWaitsForGroupEnd) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(1, &comms).isOk());
  Communicator& c = *comms[0];
  float x = 1, y = 0;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.broadcast(&x, &y, 1, DataType::kFloat32, 0).isOk());
  x = 2;
  y = 0;
  ASSERT_TRUE(groupStart().isOk());
  ASSERT_TRUE(c.broadcast(&x, &y, 1, DataType::kFloat32, 0).isOk());
  EXPECT_EQ(y, 0.0f);  // deferred, not run
  ASSERT_TRUE(groupEnd().isOk());
  EXPECT_EQ(y, 2.0f);
  // And after the group, the same call again runs at once, as do calls between an async one and its repeat.
  x = 3;
  ASSERT_TRUE(c.broadcast(&x, &y, 1, DataType::kFloat32, 0).isOk());
  EXPECT_EQ(y, 3.0f);
  float z = 0;
  Request r = c.allReduceAsync(&x, &z, 1, DataType::kFloat32, RedOp::sum());
  ASSERT_TRUE(r.wait().isOk());
  EXPECT_EQ(z, 3.0f);
  for (float v : {5.0f, 6.0f}) {  // the async call's arguments, now blocking: checked once, then repeated
    x = v;
    ASSERT_TRUE(c.allReduce(&x, &z, 1, DataType::kFloat32, RedOp::sum()).isOk());
    EXPECT_EQ(z, v);
  }
  // Empty calls repeated stay no-ops.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(c.broadcast(nullptr, nullptr, 0, DataType::kFloat32, 0).isOk());
  ASSERT_TRUE(c.broadcast(&x, &y, 1, DataType::kFloat32, 0).isOk());
  EXPECT_EQ(y, 6.0f);
}

TEST(ThreadCommunicator, SendRecvCountMismatchIsReported) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(2, &comms).isOk());
  std::vector<float> buf(64);
  Status s0, s1;
  std::thread t([&] { s1 = comms[1]->recv(buf.data(), 32, DataType::kFloat32, 0); });
  s0 = comms[0]->send(buf.data(), 64, DataType::kFloat32, 1);
  t.join();
  EXPECT_EQ(s1.code(), ErrorCode::kInvalidUsage);
  EXPECT_NE(s1.message().find("mismatch"), std::string::npos) << s1.message();
}

TEST(ThreadCommunicator, AbortFromAnotherThreadUnblocksAWait) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(2, &comms).isOk());
  float x = 1;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    comms[0]->abort();
  });
  auto start = std::chrono::steady_clock::now();
  Status st = comms[0]->allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum());  // rank 1 never joins
  aborter.join();
  EXPECT_FALSE(st.isOk());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(st.message().find("AllReduce"), std::string::npos) << st.message();
}

// The second of two identical calls on the same buffers reuses the bound plan: it must still read the new input.
TEST(ThreadCommunicator, RepeatedCallOnTheSameBuffersSeesNewData) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(3, &comms).isOk());
  auto errors = onEveryRank(comms, [](Communicator& comm, int r) -> std::string {
    std::vector<float> in(4096), out(4096);
    for (int call = 1; call <= 3; ++call) {
      std::fill(in.begin(), in.end(), static_cast<float>(call * (r + 1)));
      Status st = comm.allReduce(in.data(), out.data(), in.size(), DataType::kFloat32, RedOp::sum());
      if (!st.isOk()) return st.message();
      if (out.front() != 6.0f * call || out.back() != 6.0f * call) return "call " + std::to_string(call);
    }
    return "";
  });
  for (auto& e : errors) EXPECT_EQ(e, "");
}

// A group repeated runs its bound steps again (a rewind): each run reads its new inputs, and a run on other buffers
// (some operations' only) uses them and leaves the former ones alone. A group with another count is bound anew, and
// the first one runs right after again.
TEST(ThreadCommunicator, ARepeatedGroupSeesNewDataAndOtherBuffers) {
  constexpr int kRanks = 3;
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(kRanks, &comms).isOk());
  auto errors = onEveryRank(comms, [](Communicator& comm, int r) -> std::string {
    const int next = (r + 1) % kRanks, prev = (r + kRanks - 1) % kRanks;
    constexpr size_t kMax = 70000;  // above the 64 KiB streaming threshold for cold buffers, in int32s
    std::vector<int32_t> in(kMax), sum(kMax), other(kMax), mine(kMax), all(kRanks * kMax), sent(kMax), got(kMax),
        got2(kMax);
    // Runs: 0-2 the same group, 3 with the AllReduce into `other` and the Recv into `got2`, 4 with another count,
    // 5 the first group again.
    for (int run = 0; run < 6; ++run) {
      const size_t n = run == 4 ? 1021 : kMax;
      int32_t* reduced = run == 3 ? other.data() : sum.data();
      int32_t* received = run == 3 ? got2.data() : got.data();
      if (run == 3) std::fill(sum.begin(), sum.end(), -7);
      for (size_t i = 0; i < n; ++i) {
        in[i] = run * 100 + r + static_cast<int32_t>(i % 7);
        mine[i] = run * 1000 + r;
        sent[i] = run * 10000 + r;
      }
      if (!groupStart().isOk()) return "groupStart";
      Status st = comm.allReduce(in.data(), reduced, n, DataType::kInt32, RedOp::sum());
      if (st.isOk()) st = comm.allGather(mine.data(), all.data(), n, DataType::kInt32);
      if (st.isOk()) st = comm.send(sent.data(), n, DataType::kInt32, next);
      if (st.isOk()) st = comm.recv(received, n, DataType::kInt32, prev);
      Status ended = groupEnd();
      if (!st.isOk()) return st.message();
      if (!ended.isOk()) return "run " + std::to_string(run) + ": " + ended.message();
      for (size_t i = 0; i < n; ++i) {
        const int32_t expected = kRanks * run * 100 + (0 + 1 + 2) + kRanks * static_cast<int32_t>(i % 7);
        if (reduced[i] != expected) return "run " + std::to_string(run) + ": AllReduce at " + std::to_string(i);
        if (received[i] != run * 10000 + prev) return "run " + std::to_string(run) + ": Recv at " + std::to_string(i);
        if (run == 3 && sum[i] != -7) return "run 3 wrote the former AllReduce output at " + std::to_string(i);
      }
      for (int q = 0; q < kRanks; ++q) {
        if (all[q * n] != run * 1000 + q || all[q * n + n - 1] != run * 1000 + q)
          return "run " + std::to_string(run) + ": AllGather block " + std::to_string(q);
      }
    }
    return "";
  });
  for (auto& e : errors) EXPECT_EQ(e, "");
}

// A rank whose group differs from the bound one its peers repeat fails with them, naming the mismatch, instead of
// running the peers' rewound steps against its own.
TEST(ThreadCommunicator, AGroupThatDiffersOnOneRankAfterRepeatsIsAMismatch) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(2, &comms).isOk());
  auto errors = onEveryRank(comms, [](Communicator& comm, int r) -> std::string {
    std::vector<float> a(256, 1.0f), b(256), c(256, 2.0f), d(256);
    for (int run = 0; run < 3; ++run) {
      const size_t n = run == 2 && r == 0 ? 128 : 256;  // rank 0's third group reduces fewer elements
      if (!groupStart().isOk()) return "groupStart";
      Status st = comm.allReduce(a.data(), b.data(), n, DataType::kFloat32, RedOp::sum());
      if (st.isOk()) st = comm.allReduce(c.data(), d.data(), 256, DataType::kFloat32, RedOp::max());
      Status ended = groupEnd();
      if (!st.isOk()) return "run " + std::to_string(run) + " queued: " + st.message();
      if (run < 2 && !ended.isOk()) return "run " + std::to_string(run) + ": " + ended.message();
      if (run == 2) {
        if (ended.isOk()) return "the mismatched group passed";
        if (ended.message().find("mismatch") == std::string::npos) return "not a mismatch: " + ended.message();
      }
    }
    return "";
  });
  for (auto& e : errors) EXPECT_EQ(e, "");
}

// The same call on other buffers reuses the bound plan pointed at them: each call must read its own input and write
// its own output, and leave the previous call's buffers alone, for small calls, stream-sized ones and large ones
// (direct transfers, whose registration must follow the buffer), out of place and in place.
TEST(ThreadCommunicator, RepeatedCallOnOtherBuffersUsesThem) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(3, &comms).isOk());
  auto errors = onEveryRank(comms, [](Communicator& comm, int r) -> std::string {
    for (bool broadcast : {false, true}) {
      for (size_t count : {size_t{5}, size_t{3000}, size_t{300001}}) {
        std::vector<std::vector<float>> in(2, std::vector<float>(count)), out(2, std::vector<float>(count));
        // The calls alternate between pair 0 and pair 1, and the last runs in place on pair 0's output.
        for (int call = 0; call < 5; ++call) {
          const size_t pair = static_cast<size_t>(call % 2);
          const bool inPlace = call == 4;
          for (auto& v : out) std::fill(v.begin(), v.end(), -1.0f);
          float* input = inPlace ? out[0].data() : in[pair].data();
          float* output = inPlace ? out[0].data() : out[pair].data();
          const float mine = broadcast ? (r == 1 ? call + 10.0f : -5.0f) : static_cast<float>((call + 1) * (r + 1));
          const float expected = broadcast ? call + 10.0f : 6.0f * (call + 1);
          std::fill(input, input + count, mine);
          Status st = broadcast ? comm.broadcast(input, output, count, DataType::kFloat32, 1)
                                : comm.allReduce(input, output, count, DataType::kFloat32, RedOp::sum());
          if (!st.isOk()) return st.message();
          const std::string where = std::string(broadcast ? "Broadcast" : "AllReduce") + " count " +
                                    std::to_string(count) + " call " + std::to_string(call);
          if (output[0] != expected || output[count - 1] != expected) return where + ": wrong result";
          const std::vector<float>& other = out[inPlace ? 1 : 1 - pair];
          if (other.front() != -1.0f || other.back() != -1.0f) return where + ": wrote another call's output";
        }
      }
    }
    return "";
  });
  for (auto& e : errors) EXPECT_EQ(e, "");
}

// A rank sending to itself goes through its self connection: small messages (line channel), stream-sized ones and
// large ones (direct transfers), several in one group, in order.
TEST(ThreadCommunicator, SendToSelfInAGroup) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(1, &comms).isOk());
  for (size_t count : {size_t{3}, size_t{200}, size_t{5000}, size_t{300001}}) {
    std::vector<float> a(count), b(count), outA(count, -1.0f), outB(count, -1.0f);
    for (size_t i = 0; i < count; ++i) {
      a[i] = static_cast<float>(i % 1000);
      b[i] = static_cast<float>(i % 777) + 0.5f;
    }
    ASSERT_TRUE(groupStart().isOk());
    ASSERT_TRUE(comms[0]->send(a.data(), count, DataType::kFloat32, 0).isOk());
    ASSERT_TRUE(comms[0]->send(b.data(), count, DataType::kFloat32, 0).isOk());
    ASSERT_TRUE(comms[0]->recv(outA.data(), count, DataType::kFloat32, 0).isOk());
    ASSERT_TRUE(comms[0]->recv(outB.data(), count, DataType::kFloat32, 0).isOk());
    Status st = groupEnd();
    ASSERT_TRUE(st.isOk()) << st.message();
    EXPECT_EQ(outA, a) << count;
    EXPECT_EQ(outB, b) << count;
  }
}

}  // namespace
}  // namespace chorus::testing

// What a framework embedding chorus needs of its C++ API: an async variant of every call, a barrier, communicators
// that meet through the framework's own key-value store, and a timeout and algorithm rules per communicator.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>
#include <tuple>

#include "chorus/communicator.hpp"
#include "chorus/store.hpp"
#include "core/settings.hpp"

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Runs `body(rank)` on one thread per rank; returns each rank's error text ("" when it went well).
std::vector<std::string> onThreads(int nranks, const std::function<std::string(int)>& body) {
  std::vector<std::string> errors(nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) threads.emplace_back([&, r] { errors[r] = body(r); });
  for (auto& t : threads) t.join();
  return errors;
}

void expectAllPassed(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

std::string failed(const char* what, const Status& st) { return std::string(what) + ": " + st.message(); }

// A store in this process, as a framework's would be: keys and counters under one lock; set-if-absent optional.
class MemoryStore : public Store {
 public:
  explicit MemoryStore(bool setsIfAbsent = true) : setsIfAbsent_(setsIfAbsent) {}
  Status set(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[key] = value;
    return Status::ok();
  }
  Status tryGet(const std::string& key, std::string* value, bool* found) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = values_.find(key);
    *found = it != values_.end();
    if (*found) *value = it->second;
    return Status::ok();
  }
  Status add(const std::string& key, int64_t delta, int64_t* result) override {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string& v = values_[key];
    *result = (v.empty() ? 0 : std::stoll(v)) + delta;
    v = std::to_string(*result);
    return Status::ok();
  }
  Status setIfAbsent(const std::string& key, const std::string& value, std::string* stored) override {
    if (!setsIfAbsent_) return Store::setIfAbsent(key, value, stored);
    std::lock_guard<std::mutex> lock(mutex_);
    *stored = values_.emplace(key, value).first->second;
    return Status::ok();
  }

 private:
  const bool setsIfAbsent_;
  std::mutex mutex_;
  std::map<std::string, std::string> values_;
};

// A store that has gone away: every request fails.
class BrokenStore : public Store {
 public:
  Status set(const std::string&, const std::string&) override { return remoteError("connection reset"); }
  Status tryGet(const std::string&, std::string*, bool*) override { return remoteError("connection reset"); }
  Status add(const std::string&, int64_t, int64_t*) override { return remoteError("connection reset"); }
};

std::vector<std::unique_ptr<Communicator>> localComms(int nranks) {
  std::vector<std::unique_ptr<Communicator>> comms;
  EXPECT_TRUE(Communicator::createLocal(nranks, &comms).isOk());
  return comms;
}

TEST(AsyncCalls, EveryCollectiveMatchesItsResult) {
  constexpr int n = 3;
  auto comms = localComms(n);
  expectAllPassed(onThreads(n, [&](int r) -> std::string {
    Communicator& c = *comms[r];
    const int root = 1;
    std::vector<int32_t> mine(4, r + 1), reduced(4, -1), gathered(4 * n, -1), scattered(4, -1);
    std::vector<int32_t> toScatter(4 * n);
    std::iota(toScatter.begin(), toScatter.end(), 100);
    // AlltoAllv: rank r sends p+1 elements of value 10r+p to rank p. The counts live only for the call.
    std::vector<int32_t> vSend, vRecv;
    Request v;
    {
      std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
      size_t sOff = 0, rOff = 0;
      for (int p = 0; p < n; ++p) {
        sc[p] = p + 1;
        sd[p] = sOff;
        sOff += sc[p];
        rc[p] = r + 1;
        rd[p] = rOff;
        rOff += rc[p];
        for (int i = 0; i <= p; ++i) vSend.push_back(10 * r + p);
      }
      vRecv.assign(rOff, -1);
      v = c.alltoAllvAsync(vSend.data(), sc.data(), sd.data(), vRecv.data(), rc.data(), rd.data(), DataType::kInt32);
    }
    Request red = c.reduceAsync(mine.data(), reduced.data(), 4, DataType::kInt32, RedOp::sum(), root);
    Request gat = c.gatherAsync(mine.data(), gathered.data(), 4, DataType::kInt32, root);
    Request sca = c.scatterAsync(toScatter.data(), scattered.data(), 4, DataType::kInt32, root);
    for (Request* q : {&v, &red, &gat, &sca})
      if (Status st = q->wait(); !st.isOk()) return failed("wait", st);
    for (int p = 0; p < n; ++p)
      for (int i = 0; i <= r; ++i)
        if (vRecv[p * (r + 1) + i] != 10 * p + r) return "AlltoAllv: wrong element from rank " + std::to_string(p);
    if (r == root && reduced != std::vector<int32_t>(4, 6)) return "Reduce: wrong sum";
    if (r == root)
      for (int p = 0; p < n; ++p)
        if (gathered[4 * p] != p + 1) return "Gather: wrong block " + std::to_string(p);
    if (scattered[0] != 100 + 4 * r) return "Scatter: wrong block";
    return "";
  }));
}

TEST(AsyncCalls, SendAndRecvAroundARing) {
  constexpr int n = 4;
  auto comms = localComms(n);
  expectAllPassed(onThreads(n, [&](int r) -> std::string {
    Communicator& c = *comms[r];
    // 1 MiB each: large enough to go as direct transfers where the transport has them.
    std::vector<float> out(1 << 18, static_cast<float>(r)), in(1 << 18, -1.0f);
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    // They run one after another on the communicator's thread: even ranks send first, odd ones receive first.
    Request first = r % 2 == 0 ? c.sendAsync(out.data(), out.size(), DataType::kFloat32, next)
                               : c.recvAsync(in.data(), in.size(), DataType::kFloat32, prev);
    Request second = r % 2 == 0 ? c.recvAsync(in.data(), in.size(), DataType::kFloat32, prev)
                                : c.sendAsync(out.data(), out.size(), DataType::kFloat32, next);
    if (Status st = first.wait(); !st.isOk()) return failed("first", st);
    if (Status st = second.wait(); !st.isOk()) return failed("second", st);
    if (in.front() != prev || in.back() != prev) return "wrong data from rank " + std::to_string(prev);
    return "";
  }));
}

TEST(AsyncCalls, InsideAGroupAreRejected) {
  auto comms = localComms(1);
  float x = 1;
  ASSERT_TRUE(groupStart().isOk());
  Status st = comms[0]->allReduceAsync(&x, &x, 1, DataType::kFloat32, RedOp::sum()).wait();
  ASSERT_TRUE(groupEnd().isOk());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidUsage);
  EXPECT_NE(st.message().find("inside a group"), std::string::npos) << st.message();
}

TEST(AsyncGroups, SendsAndRecvsBothWaysRunOffTheCallersThread) {
  constexpr int n = 4;
  auto comms = localComms(n);
  expectAllPassed(onThreads(n, [&](int r) -> std::string {
    Communicator& c = *comms[r];
    // Every rank sends before it receives, both ways around the ring: only a group keeps that from deadlocking.
    std::vector<int32_t> out(1 << 18, r), fromPrev(1 << 18, -1), fromNext(1 << 18, -1);
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    if (!groupStart().isOk()) return "groupStart";
    for (int peer : {next, prev})
      if (Status st = c.send(out.data(), out.size(), DataType::kInt32, peer); !st.isOk()) return failed("send", st);
    (void)c.recv(fromPrev.data(), fromPrev.size(), DataType::kInt32, prev);
    (void)c.recv(fromNext.data(), fromNext.size(), DataType::kInt32, next);
    Request group = groupEndAsync();
    if (Status st = group.wait(); !st.isOk()) return failed("group", st);
    if (fromPrev.back() != prev || fromNext.back() != next) return "wrong data";
    return "";
  }));
}

TEST(AsyncGroups, OnlyOneCommunicatorsOperationsAtTheOutermostLevel) {
  auto comms = localComms(2);
  float x = 1;
  EXPECT_EQ(groupEndAsync().wait().code(), ErrorCode::kInvalidUsage);
  ASSERT_TRUE(groupStart().isOk());
  ASSERT_TRUE(groupStart().isOk());
  EXPECT_EQ(groupEndAsync().wait().code(), ErrorCode::kInvalidUsage);
  ASSERT_TRUE(comms[0]->allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()).isOk());
  ASSERT_TRUE(comms[1]->allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()).isOk());
  Status st = groupEndAsync().wait();
  EXPECT_EQ(st.code(), ErrorCode::kInvalidUsage);
  EXPECT_NE(st.message().find("one communicator"), std::string::npos) << st.message();
  EXPECT_TRUE(groupEndAsync().wait().code() == ErrorCode::kInvalidUsage);  // no group is open any more
}

TEST(RequestCallbacks, RunOnceWithTheStatusWhenTheCallFinished) {
  constexpr int n = 2;
  auto comms = localComms(n);
  expectAllPassed(onThreads(n, [&](int r) -> std::string {
    // Shared: the callback may still be returning on the communicator's thread when this one goes on.
    auto done = std::make_shared<std::promise<Status>>();
    auto calls = std::make_shared<std::atomic<int>>(0);
    std::vector<float> x(1024, 1.0f);
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 0's callback is set before
    Request req = comms[r]->allReduceAsync(x.data(), x.data(), x.size(), DataType::kFloat32, RedOp::sum());
    req.onComplete([done, calls](const Status& st) {
      calls->fetch_add(1);
      done->set_value(st);
    });
    if (Status st = done->get_future().get(); !st.isOk()) return failed("callback", st);
    if (!req.test() || calls->load() != 1) return "callback before completion, or twice";
    if (x[0] != 2.0f) return "callback before the result was written";
    // A finished request calls back at once, on this thread.
    bool now = false;
    req.onComplete([&](const Status&) { now = true; });
    return now ? "" : "no callback for a finished request";
  }));
}

TEST(Barrier, NoRankLeavesBeforeTheLastArrives) {
  constexpr int n = 4;
  auto comms = localComms(n);
  std::atomic<int> arrived{0};
  expectAllPassed(onThreads(n, [&](int r) -> std::string {
    for (int round = 1; round <= 3; ++round) {
      if (r == round % n) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the late one
      arrived.fetch_add(1);
      Status st = round == 2 ? comms[r]->barrierAsync().wait() : comms[r]->barrier();
      if (!st.isOk()) return failed("barrier", st);
      if (arrived.load() < round * n) return "left barrier " + std::to_string(round) + " before every rank arrived";
    }
    return "";
  }));
}

TEST(FrameworkStore, RanksMeetThroughIt) {
  constexpr int n = 3;
  auto store = std::make_shared<MemoryStore>();
  expectAllPassed(onThreads(n, [&](int r) -> std::string {
    // Two communicators under one prefix, made in the same order on every rank, and one under another.
    for (const char* prefix : {"job", "job", "other"}) {
      std::unique_ptr<Communicator> comm;
      if (Status st = Communicator::create(store, prefix, n, r, &comm); !st.isOk()) return failed("create", st);
      int64_t v = r + 1, sum = 0;
      if (Status st = comm->allReduce(&v, &sum, 1, DataType::kInt64, RedOp::sum()); !st.isOk())
        return failed("allReduce", st);
      if (sum != 6) return "wrong sum " + std::to_string(sum);
    }
    return "";
  }));
}

TEST(FrameworkStore, ItsErrorsNameIt) {
  std::unique_ptr<Communicator> comm;
  Status st = Communicator::create(std::make_shared<BrokenStore>(), "job", 2, 0, &comm);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("the framework's store"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("connection reset"), std::string::npos) << st.message();
  EXPECT_EQ(Communicator::create(nullptr, "job", 2, 0, &comm).code(), ErrorCode::kInvalidArgument);
}

// Agreement keeps the first rank's proposal where the store can set-if-absent, and lets one rank decide where it
// cannot: the same result either way.
TEST(FrameworkStore, AgreementWithAndWithoutSetIfAbsent) {
  constexpr int n = 3;
  for (bool setsIfAbsent : {true, false}) {
    auto store = std::make_shared<MemoryStore>(setsIfAbsent);
    expectAllPassed(onThreads(n, [&](int r) -> std::string {
      std::unique_ptr<Communicator> comm;
      if (Status st = Communicator::create(store, "agree", n, r, &comm); !st.isOk()) return failed("create", st);
      for (int round = 0; round < 3; ++round) {
        uint32_t v = 0xf0u | (1u << r);
        std::vector<int> members;
        if (Status st = comm->agree(&v, &members, 5.0); !st.isOk()) return failed("agree", st);
        if (v != 0xf0u || members != std::vector<int>{0, 1, 2})
          return "round " + std::to_string(round) + ": value " + std::to_string(v) + ", " +
                 std::to_string(members.size()) + " members";
      }
      return "";
    }));
  }
}

TEST(FrameworkStore, AMissingRankEndsInTheCommunicatorsTimeout) {
  auto store = std::make_shared<MemoryStore>();
  CommConfig config;
  config.timeoutSeconds = 0.5;
  const auto start = Clock::now();
  std::vector<std::string> errors = onThreads(2, [&](int r) -> std::string {
    std::unique_ptr<Communicator> comm;
    Status st = Communicator::create(store, "short", 3, r, &comm, config);  // rank 2 never comes
    // The first rank to time out says so; the other may learn it from the store first, with that cause.
    if (st.isOk()) return "init succeeded";
    return st.message().find("waiting for rank 2") != std::string::npos ? "" : "rank 2 not named: " + st.message();
  });
  expectAllPassed(errors);
  EXPECT_LT(secondsSince(start), 10.0);
}

TEST(FrameworkStore, AFailedInitEndsTheOthersWithItsCause) {
  auto store = std::make_shared<MemoryStore>();
  const auto start = Clock::now();
  std::vector<std::string> errors = onThreads(2, [&](int r) -> std::string {
    CommConfig config;
    config.timeoutSeconds = 60;
    if (r == 1) config.algorithm = "allreduce:no_such_algorithm";
    std::unique_ptr<Communicator> comm;
    Status st = Communicator::create(store, "bad", 2, r, &comm, config);
    if (st.isOk()) return "init succeeded";
    return st.message().find("no_such_algorithm") != std::string::npos ? "" : "cause not named: " + st.message();
  });
  expectAllPassed(errors);
  EXPECT_LT(secondsSince(start), 10.0);  // not the 60 s timeout
}

// Creates `n` communicators of one UniqueId with `config`, one thread each.
std::vector<std::unique_ptr<Communicator>> commsWith(int n, const CommConfig& config) {
  UniqueId id;
  EXPECT_TRUE(UniqueId::create(&id).isOk());
  std::vector<std::unique_ptr<Communicator>> comms(n);
  expectAllPassed(onThreads(n, [&](int r) -> std::string {
    Status st = Communicator::create(id, n, r, &comms[r], config);
    return st.isOk() ? "" : failed("create", st);
  }));
  return comms;
}

// Rank 0 of two with `timeoutSeconds` calls AllReduce, rank 1 never does: the call's status and how long it waited.
Status callThatNoPeerJoins(double timeoutSeconds, double* waited) {
  CommConfig config;
  config.timeoutSeconds = timeoutSeconds;
  auto comms = commsWith(2, config);
  if (!comms[0] || !comms[1]) return internalError("create failed");
  float x = 1;
  const auto start = Clock::now();
  Status st = comms[0]->allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum());
  *waited = secondsSince(start);
  for (auto& c : comms) c->abort();
  return st;
}

TEST(CommunicatorSettings, TimeoutEndsACallThatNoPeerJoins) {
  double waited = 0;
  Status st = callThatNoPeerJoins(0.5, &waited);
  EXPECT_EQ(st.code(), ErrorCode::kTimeout) << st.message();
  EXPECT_NE(st.message().find("the communicator's timeout"), std::string::npos) << st.message();
  EXPECT_LT(waited, 10.0);
}

TEST(CommunicatorSettings, ALongerTimeoutThanTheSettingHolds) {
  setenv("CHORUS_TIMEOUT", "0.2", 1);
  reloadSettings();
  double waited = 0;
  Status st = callThatNoPeerJoins(1.5, &waited);
  unsetenv("CHORUS_TIMEOUT");
  reloadSettings();
  EXPECT_EQ(st.code(), ErrorCode::kTimeout) << st.message();
  EXPECT_GE(waited, 1.4) << st.message();
}

// A framework's set_timeout: a communicator created with a long timeout, shortened afterwards, ends a call that no
// peer joins within the new one, and so do the communicators split from it afterwards.
TEST(CommunicatorSettings, SetTimeoutShortensLaterCallsAndSplits) {
  CommConfig config;
  config.timeoutSeconds = 60;
  auto comms = commsWith(2, config);
  std::vector<std::unique_ptr<Communicator>> children(2);
  expectAllPassed(onThreads(2, [&](int r) -> std::string {
    if (Status st = comms[r]->setTimeout(0.5); !st.isOk()) return failed("setTimeout", st);
    Status st = comms[r]->split(0, r, &children[r]);
    return st.isOk() ? "" : failed("split", st);
  }));
  for (Communicator* comm : {comms[0].get(), children[0].get()}) {
    float x = 1;
    const auto start = Clock::now();
    Status st = comm->allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum());  // rank 1 never joins
    EXPECT_EQ(st.code(), ErrorCode::kTimeout) << st.message();
    EXPECT_NE(st.message().find("0.5 s (the communicator's timeout)"), std::string::npos) << st.message();
    EXPECT_LT(secondsSince(start), 10.0);
  }
  for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()})
    EXPECT_EQ(comms[1]->setTimeout(bad).code(), ErrorCode::kInvalidArgument) << bad;
  for (auto& c : children) c->abort();
  for (auto& c : comms) c->abort();
}

TEST(CommunicatorSettings, AlgorithmRulesApplyToThisCommunicatorAndItsSplits) {
  constexpr int n = 3;
  constexpr size_t count = 3 * 1024;
  // One-shot sends the whole buffer to each peer; the ring sends 2(n-1)/n of it. The wire bytes tell them apart.
  for (const char* algorithm : {"allreduce:one_shot", "allreduce:ring"}) {
    CommConfig config;
    config.algorithm = algorithm;
    auto comms = commsWith(n, config);
    std::vector<uint64_t> wire(n), childWire(n);
    expectAllPassed(onThreads(n, [&](int r) -> std::string {
      std::vector<float> data(count, 1.0f);
      if (Status st = comms[r]->allReduce(data.data(), data.data(), count, DataType::kFloat32, RedOp::sum());
          !st.isOk())
        return failed("allReduce", st);
      wire[r] = comms[r]->counters().allReduce.wireBytes;
      std::unique_ptr<Communicator> child;
      if (Status st = comms[r]->split(0, r, &child); !st.isOk()) return failed("split", st);
      if (Status st = child->allReduce(data.data(), data.data(), count, DataType::kFloat32, RedOp::sum()); !st.isOk())
        return failed("child allReduce", st);
      childWire[r] = child->counters().allReduce.wireBytes;
      return "";
    }));
    const uint64_t bytes = count * sizeof(float);
    const uint64_t expected =
        std::string(algorithm).find("one_shot") != std::string::npos ? (n - 1) * bytes : 2 * (n - 1) * bytes / n;
    EXPECT_EQ(wire[0], expected) << algorithm;
    EXPECT_EQ(childWire[0], expected) << algorithm << " (split)";
  }
}

// CommConfig::settings gives one communicator (and its splits) its own values: two communicators of one process,
// each with its own CHORUS_ALGO, run different algorithms; the wire bytes tell which ran.
TEST(CommunicatorSettings, SettingsOverrideTheEnvironmentForOneCommunicator) {
  constexpr int n = 3;
  constexpr size_t count = 3 * 1024;
  CommConfig oneShot, ring;
  oneShot.settings = {{"CHORUS_ALGO", "allreduce:one_shot"}, {"CHORUS_SPIN", "64"}};
  ring.settings = {{"CHORUS_ALGO", "allreduce:ring"}};
  auto first = commsWith(n, oneShot);
  auto second = commsWith(n, ring);
  std::vector<uint64_t> wire(n), childWire(n), ringWire(n);
  expectAllPassed(onThreads(n, [&](int r) -> std::string {
    std::vector<float> data(count, 1.0f);
    if (Status st = first[r]->allReduce(data.data(), data.data(), count, DataType::kFloat32, RedOp::sum()); !st.isOk())
      return failed("allReduce", st);
    wire[r] = first[r]->counters().allReduce.wireBytes;
    if (Status st = second[r]->allReduce(data.data(), data.data(), count, DataType::kFloat32, RedOp::sum()); !st.isOk())
      return failed("ring allReduce", st);
    ringWire[r] = second[r]->counters().allReduce.wireBytes;
    std::unique_ptr<Communicator> child;
    if (Status st = first[r]->split(0, r, &child); !st.isOk()) return failed("split", st);
    if (Status st = child->allReduce(data.data(), data.data(), count, DataType::kFloat32, RedOp::sum()); !st.isOk())
      return failed("child allReduce", st);
    childWire[r] = child->counters().allReduce.wireBytes;
    return "";
  }));
  const uint64_t bytes = count * sizeof(float);
  EXPECT_EQ(wire[0], (n - 1) * bytes);
  EXPECT_EQ(childWire[0], (n - 1) * bytes) << "the split inherits the settings";
  EXPECT_EQ(ringWire[0], 2 * (n - 1) * bytes / n);
}

TEST(CommunicatorSettings, InvalidSettingsAreRejectedByName) {
  for (const auto& [name, value, expected] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"CHORUS_NOT_A_SETTING", "1", "'CHORUS_NOT_A_SETTING' is not a setting"},
           {"CHORUS_COMM_ID", "host:1", "CHORUS_COMM_ID is read once for the whole process"},
           {"CHORUS_SHM_BUFFER", "lots", "CHORUS_SHM_BUFFER='lots' is invalid"}}) {
    UniqueId id;
    ASSERT_TRUE(UniqueId::create(&id).isOk());
    CommConfig config;
    config.settings = {{name, value}};
    std::unique_ptr<Communicator> comm;
    Status st = Communicator::create(id, 1, 0, &comm, config);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << name;
    EXPECT_NE(st.message().find("CommConfig.settings: " + expected), std::string::npos) << st.message();
  }
}

TEST(CommunicatorSettings, InvalidValuesAreRejected) {
  UniqueId id;
  ASSERT_TRUE(UniqueId::create(&id).isOk());
  CommConfig config;
  config.timeoutSeconds = -1;
  std::unique_ptr<Communicator> comm;
  EXPECT_EQ(Communicator::create(id, 1, 0, &comm, config).code(), ErrorCode::kInvalidArgument);
  config.timeoutSeconds = 0;
  config.algorithm = "allreduce:";
  Status st = Communicator::create(id, 1, 0, &comm, config);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("CommConfig.algorithm"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace chorus

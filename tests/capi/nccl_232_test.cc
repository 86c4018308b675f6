// What NCCL 2.29-2.32's nccl.h added, through the C API, ranks as threads of one process: the nccl*Config
// collectives with their algorithm selection (the choice shows in the COLL log line), settings by name, suspend and
// resume with the memory figures, window pointers, grow, and the one-sided calls refused without numRmaCtx.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"

namespace {

constexpr int kRanks = 4;

// Runs body(rank) on one thread per rank (a communicator's calls block until its peers come).
void onThreads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&body, r] { body(r); });
  for (auto& t : threads) t.join();
}

// The COLL lines of this process go to a file of its own, read back by the tests; waits end after 20 s. Set before
// main, so before chorus reads its settings.
std::string logPath() { return "/tmp/chorus_nccl_232." + std::to_string(getpid()) + ".log"; }
const bool kEnvironmentSet = [] {
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "COLL", 1);
  setenv("NCCL_DEBUG_FILE", logPath().c_str(), 1);
  setenv("CHORUS_TIMEOUT", "20", 1);
  atexit([] { unlink(logPath().c_str()); });
  return true;
}();

std::string logText() {
  std::ifstream in(logPath());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class Capi232 : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(ncclCommInitAll(comms_, kRanks, nullptr), ncclSuccess); }
  void TearDown() override {
    for (ncclComm_t c : comms_)
      if (c) ncclCommDestroy(c);
  }

  // An AllReduce of `count` floats (each rank's r + 1) with `selection`, on every rank; the results per rank.
  std::vector<ncclResult_t> allReduce(size_t count, const char* selection, int force = 1,
                                      std::vector<std::vector<float>>* out = nullptr) {
    std::vector<ncclResult_t> results(kRanks);
    std::vector<std::vector<float>> data(kRanks);
    onThreads(kRanks, [&](int r) {
      data[r].assign(count, static_cast<float>(r + 1));
      ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
      config.algSelection = selection;
      config.forceAlgSelection = force;
      results[r] =
          ncclAllReduceConfig(data[r].data(), data[r].data(), count, ncclFloat32, ncclSum, comms_[r], nullptr, &config);
    });
    if (out) *out = data;
    return results;
  }

  ncclComm_t comms_[kRanks] = {};
};

TEST_F(Capi232, AllReduceConfigRunsTheSelectedAlgorithm) {
  const struct {
    size_t count;
    const char* selection;
    const char* algorithm;
  } cases[] = {{1001, "ring", "ring"},
               {1002, "rec_doubling", "rec_doubling"},
               {1003, "TREE", "tree"},                  // NCCL's name: the log-depth AllReduce
               {1004, "one+^ring", "one_shot"},         // a prefix, and-ed with a negation
               {1005, "RING_SIMPLE,direct", nullptr}};  // either: the faster by the model
  for (const auto& c : cases) {
    std::vector<std::vector<float>> data;
    std::vector<ncclResult_t> results = allReduce(c.count, c.selection, 1, &data);
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_EQ(results[r], ncclSuccess) << c.selection << ": " << ncclGetLastError(nullptr);
      for (float v : data[r]) ASSERT_EQ(v, 1.0f + 2 + 3 + 4) << c.selection;
    }
  }
  const std::string log = logText();
  ASSERT_FALSE(log.empty()) << "no log at NCCL_DEBUG_FILE";
  for (const auto& c : cases) {
    if (!c.algorithm) continue;
    const std::string expect = "count " + std::to_string(c.count) + " float sum root 0 algorithm " + c.algorithm + " ";
    EXPECT_NE(log.find(expect), std::string::npos) << c.selection << " did not run " << c.algorithm;
  }
  const std::string either = "count 1005 float sum root 0 algorithm ";
  const size_t at = log.find(either);
  ASSERT_NE(at, std::string::npos);
  const std::string chosen = log.substr(at + either.size(), log.find(' ', at + either.size()) - at - either.size());
  EXPECT_TRUE(chosen == "ring" || chosen == "direct") << chosen;
}

TEST_F(Capi232, EveryConfigCollectiveHonoursItsSelection) {
  constexpr size_t kCount = 64;
  std::vector<ncclResult_t> results(kRanks * 7, ncclInternalError);
  std::vector<std::vector<float>> recv(kRanks, std::vector<float>(kCount * kRanks));
  onThreads(kRanks, [&](int r) {
    std::vector<float> send(kCount * kRanks, static_cast<float>(r + 1));
    auto config = [](const char* selection) {
      ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
      c.algSelection = selection;
      return c;
    };
    ncclCollConfig_t ag = config("RING_SIMPLE"), rs = config("TREE_SIMPLE"), bc = config("binomial"),
                     rd = config("ring"), a2a = config("bruck"), ga = config("direct"), sc = config("direct");
    ncclResult_t* mine = &results[r * 7];
    mine[0] = ncclAllGatherConfig(send.data(), recv[r].data(), kCount, ncclFloat32, comms_[r], nullptr, &ag);
    mine[1] =
        ncclReduceScatterConfig(send.data(), recv[r].data(), kCount, ncclFloat32, ncclSum, comms_[r], nullptr, &rs);
    mine[2] = ncclBroadcastConfig(send.data(), recv[r].data(), kCount, ncclFloat32, 1, comms_[r], nullptr, &bc);
    mine[3] = ncclReduceConfig(send.data(), recv[r].data(), kCount, ncclFloat32, ncclMax, 2, comms_[r], nullptr, &rd);
    mine[4] = ncclAlltoAllConfig(send.data(), recv[r].data(), kCount, ncclFloat32, comms_[r], nullptr, &a2a);
    mine[5] = ncclGatherConfig(send.data(), recv[r].data(), kCount, ncclFloat32, 0, comms_[r], nullptr, &ga);
    mine[6] = ncclScatterConfig(send.data(), recv[r].data(), kCount, ncclFloat32, 3, comms_[r], nullptr, &sc);
  });
  for (int i = 0; i < kRanks * 7; ++i) EXPECT_EQ(results[i], ncclSuccess) << "rank " << i / 7 << " call " << i % 7;
  // The last call, Scatter from rank 3: every rank holds rank 3's block, 4s.
  for (int r = 0; r < kRanks; ++r)
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(recv[r][i], 4.0f) << "rank " << r;
  const std::string log = logText();
  for (const char* expect : {"AllGather seq", "algorithm ring", "ReduceScatter seq", "algorithm rec_halving",
                             "Broadcast seq", "algorithm binomial", "AlltoAll seq", "algorithm bruck"})
    EXPECT_NE(log.find(expect), std::string::npos) << expect;
}

TEST_F(Capi232, SelectionsThatCannotBeHonouredAreInvalidArguments) {
  // A name chorus does not know at all.
  for (ncclResult_t r : allReduce(10, "bogus")) EXPECT_EQ(r, ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("BOGUS"), std::string::npos) << ncclGetLastError(nullptr);
  // NCCL's names without a counterpart here (NVLS; the ring's LL protocol): forced, an error naming what can run.
  for (const char* selection : {"NVLS", "RING_LL", "ring+^ring"}) {
    for (ncclResult_t r : allReduce(11, selection)) EXPECT_EQ(r, ncclInvalidArgument) << selection;
    const std::string message = ncclGetLastError(nullptr);
    EXPECT_NE(message.find("allows none"), std::string::npos) << message;
    EXPECT_NE(message.find("rec_doubling"), std::string::npos) << message;  // among the algorithms that could
  }
  // Not forced: the selector's own choice runs.
  std::vector<std::vector<float>> data;
  for (ncclResult_t r : allReduce(12, "NVLS", 0, &data)) EXPECT_EQ(r, ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(data[3][11], 10.0f);
  // The communicator goes on after the refusals.
  for (ncclResult_t r : allReduce(13, nullptr)) EXPECT_EQ(r, ncclSuccess);
}

TEST_F(Capi232, CollConfigIsReadByItsSizeAndChecked) {
  float x = 1;
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  config.magic = 0;
  EXPECT_EQ(ncclAllReduceConfig(&x, &x, 1, ncclFloat32, ncclSum, comms_[0], nullptr, &config), ncclInvalidArgument);
  config = NCCL_COLLCONFIG_INITIALIZER;
  config.size = 16;
  EXPECT_EQ(ncclAllReduceConfig(&x, &x, 1, ncclFloat32, ncclSum, comms_[0], nullptr, &config), ncclInvalidArgument);
  config = NCCL_COLLCONFIG_INITIALIZER;
  config.forceAlgSelection = 2;
  EXPECT_EQ(ncclAllReduceConfig(&x, &x, 1, ncclFloat32, ncclSum, comms_[0], nullptr, &config), ncclInvalidArgument);
  config = NCCL_COLLCONFIG_INITIALIZER;
  config.CTAPolicy = 0x40;
  EXPECT_EQ(ncclAllReduceConfig(&x, &x, 1, ncclFloat32, ncclSum, comms_[0], nullptr, &config), ncclInvalidArgument);
  // A newer program's larger struct: the fields this header knows are read, nothing past them. 2.31's struct, 8
  // bytes smaller (no launchCompletionEvent), works too; both with a selection that must hold.
  struct Newer {
    ncclCollConfig_t known;
    uint64_t later[4];
  };
  std::vector<ncclResult_t> results(kRanks);
  onThreads(kRanks, [&](int r) {
    Newer newer{NCCL_COLLCONFIG_INITIALIZER, {~0ull, ~0ull, ~0ull, ~0ull}};
    newer.known.size = sizeof(Newer);
    newer.known.algSelection = "ring";
    ncclCollConfig_t older = NCCL_COLLCONFIG_INITIALIZER;
    older.size = offsetof(ncclCollConfig_t, launchCompletionEvent);
    older.algSelection = "ring";
    float v = 1;
    results[r] = ncclAllReduceConfig(&v, &v, 1, ncclFloat32, ncclSum, comms_[r], nullptr, &newer.known);
    if (results[r] == ncclSuccess)
      results[r] = ncclAllReduceConfig(&v, &v, 1, ncclFloat32, ncclSum, comms_[r], nullptr, &older);
    if (results[r] == ncclSuccess && v != 16.0f) results[r] = ncclInternalError;
  });
  for (ncclResult_t r : results) EXPECT_EQ(r, ncclSuccess) << ncclGetLastError(nullptr);
}

TEST_F(Capi232, RanksThatSelectDifferentAlgorithmsFailTheCall) {
  std::vector<ncclResult_t> results(kRanks);
  onThreads(kRanks, [&](int r) {
    std::vector<float> v(4096, 1.0f);
    ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
    config.algSelection = r == 0 ? "ring" : "rec_doubling";
    results[r] = ncclAllReduceConfig(v.data(), v.data(), v.size(), ncclFloat32, ncclSum, comms_[r], nullptr, &config);
  });
  for (int r = 0; r < kRanks; ++r) EXPECT_NE(results[r], ncclSuccess) << "rank " << r;
}

TEST(Capi232Params, SettingsByName) {
  ncclParamHandle_t timeout = nullptr, buffer = nullptr, unset = nullptr;
  ASSERT_EQ(ncclParamBind(&timeout, "CHORUS_TIMEOUT"), ncclSuccess);
  int32_t seconds = 0;
  ASSERT_EQ(ncclParamGetI32(timeout, &seconds), ncclSuccess);
  EXPECT_EQ(seconds, 20);  // the environment's (kEnvironmentSet)
  ASSERT_EQ(ncclParamBind(&buffer, "CHORUS_TCP_BUFFER"), ncclSuccess);
  uint64_t bytes = 0;
  ASSERT_EQ(ncclParamGetU64(buffer, &bytes), ncclSuccess);
  EXPECT_EQ(bytes, 4194304u);  // the default
  int8_t small = 0;
  EXPECT_EQ(ncclParamGetI8(buffer, &small), ncclInvalidArgument);  // does not fit
  const char* text = nullptr;
  ASSERT_EQ(ncclParamGetStr(buffer, &text), ncclSuccess);
  EXPECT_STREQ(text, "4194304");
  char shortBuffer[4];
  int needed = 0;
  ASSERT_EQ(ncclParamGet(buffer, shortBuffer, sizeof(shortBuffer), &needed), ncclSuccess);
  EXPECT_EQ(needed, 8);
  EXPECT_STREQ(shortBuffer, "419");
  // The NCCL alias of a setting binds it too; a setting that is unset reads as its default.
  ASSERT_EQ(ncclParamBind(&unset, "NCCL_COMM_ID"), ncclSuccess);
  int len = -1;
  ASSERT_EQ(ncclParamGetParameter("CHORUS_LOOPBACK_BUFFER", &text, &len), ncclSuccess);
  EXPECT_STREQ(text, "4194304");
  EXPECT_EQ(len, 7);
  EXPECT_EQ(ncclParamBind(&unset, "NCCL_NO_SUCH_THING"), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("NCCL_NO_SUCH_THING"), std::string::npos);
  const char** keys = nullptr;
  int count = 0;
  ASSERT_EQ(ncclParamGetAllParameterKeys(&keys, &count), ncclSuccess);
  bool found = false;
  for (int i = 0; i < count; ++i) found = found || std::string(keys[i]) == "CHORUS_TIMEOUT";
  EXPECT_TRUE(found);
  EXPECT_GT(count, 20);
  ncclParamDumpAll();  // logs; must not fail
}

TEST_F(Capi232, SuspendReleasesTheBuffersAndRefusesCallsUntilResume) {
  for (ncclResult_t r : allReduce(1 << 20, nullptr)) ASSERT_EQ(r, ncclSuccess);  // scratch and plans made
  uint64_t releasable = 0, persistent = 0, total = 0, suspended = 0;
  ASSERT_EQ(ncclCommMemStats(comms_[1], ncclStatGpuMemSuspend, &releasable), ncclSuccess);
  ASSERT_EQ(ncclCommMemStats(comms_[1], ncclStatGpuMemPersist, &persistent), ncclSuccess);
  ASSERT_EQ(ncclCommMemStats(comms_[1], ncclStatGpuMemTotal, &total), ncclSuccess);
  EXPECT_GT(releasable, 0u);
  EXPECT_GT(persistent, 0u);  // the loopback FIFOs to the other ranks
  EXPECT_EQ(total, releasable + persistent);
  EXPECT_EQ(ncclCommMemStats(comms_[1], static_cast<ncclCommMemStat_t>(9), &total), ncclInvalidArgument);

  EXPECT_EQ(ncclCommSuspend(comms_[1], 0x80), ncclInvalidArgument);
  for (ncclComm_t c : comms_) ASSERT_EQ(ncclCommSuspend(c, NCCL_SUSPEND_MEM), ncclSuccess);
  EXPECT_EQ(ncclCommSuspend(comms_[1], NCCL_SUSPEND_MEM), ncclInvalidUsage);  // already
  ASSERT_EQ(ncclCommMemStats(comms_[1], ncclStatGpuMemSuspended, &suspended), ncclSuccess);
  EXPECT_EQ(suspended, releasable);
  uint64_t after = 1;
  ASSERT_EQ(ncclCommMemStats(comms_[1], ncclStatGpuMemSuspend, &after), ncclSuccess);
  EXPECT_EQ(after, 0u);
  float x = 1;
  EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comms_[1], nullptr), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(comms_[1])).find("suspended"), std::string::npos);

  EXPECT_EQ(ncclCommResume(comms_[1]), ncclSuccess);
  EXPECT_EQ(ncclCommResume(comms_[1]), ncclInvalidUsage);  // not suspended any more
  for (int r : {0, 2, 3}) ASSERT_EQ(ncclCommResume(comms_[r]), ncclSuccess);
  std::vector<std::vector<float>> data;
  for (ncclResult_t r : allReduce(1 << 20, nullptr, 1, &data)) ASSERT_EQ(r, ncclSuccess);
  EXPECT_EQ(data[2][12345], 10.0f);
  ASSERT_EQ(ncclCommMemStats(comms_[1], ncclStatGpuMemSuspended, &suspended), ncclSuccess);
  EXPECT_EQ(suspended, 0u);
}

TEST_F(Capi232, WindowsGiveBackTheirBuffer) {
  std::vector<char> buffer(8192);
  ncclWindow_t win = nullptr;
  ASSERT_EQ(ncclCommWindowRegister(comms_[0], buffer.data(), buffer.size(), &win, NCCL_WIN_STRICT_ORDERING),
            ncclSuccess);
  void* base = nullptr;
  ASSERT_EQ(ncclWinGetUserPtr(comms_[0], win, &base), ncclSuccess);
  EXPECT_EQ(base, buffer.data());
  EXPECT_EQ(ncclWinGetUserPtr(comms_[1], win, &base), ncclInvalidArgument);  // another comm's window
  ncclWindow_t refused = nullptr;
  EXPECT_EQ(ncclCommWindowRegister(comms_[0], buffer.data(), buffer.size(), &refused, 0x100), ncclInvalidArgument);
  // One-sided operations on a communicator made without numRmaCtx: refused with an error that says how to get
  // them (tests/capi/one_sided_test.cc runs them).
  float v = 0;
  EXPECT_EQ(ncclPutSignal(&v, 1, ncclFloat32, 1, win, 0, 0, 0, 0, comms_[0], nullptr), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(comms_[0])).find("numRmaCtx"), std::string::npos);
  EXPECT_EQ(ncclSignal(1, 0, 0, 0, comms_[0], nullptr), ncclInvalidUsage);
  ncclWaitSignalDesc_t desc = {1, 1, 0, 0};
  EXPECT_EQ(ncclWaitSignal(1, &desc, comms_[0], nullptr), ncclInvalidUsage);
  EXPECT_EQ(ncclSignal(1, 0, 0, 0, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommWindowDeregister(comms_[0], win), ncclSuccess);
}

// Two ranks join the four: the old ranks keep their numbers, the joiners take 4 and 5, and all six reduce.
TEST_F(Capi232, GrowAddsRanksThatTakeTheNumbersAfterTheOldOnes) {
  ncclUniqueId id;
  ASSERT_EQ(ncclCommGetUniqueId(comms_[0], &id), ncclSuccess);
  EXPECT_EQ(ncclCommGetUniqueId(comms_[0], &id), ncclInvalidUsage);  // one outstanding
  constexpr int kGrown = kRanks + 2;
  std::vector<ncclComm_t> grown(kGrown);
  std::vector<ncclResult_t> results(kGrown, ncclInternalError);
  std::vector<int> ranks(kGrown, -1), counts(kGrown, 0);
  std::vector<float> sums(kGrown);
  onThreads(kGrown, [&](int r) {
    if (r < kRanks) {
      results[r] = ncclCommGrow(comms_[r], kGrown, r == 0 ? &id : nullptr, -1, &grown[r], nullptr);
    } else {
      results[r] = ncclCommGrow(nullptr, kGrown, &id, r, &grown[r], nullptr);
    }
    if (results[r] != ncclSuccess) return;
    ncclCommUserRank(grown[r], &ranks[r]);
    ncclCommCount(grown[r], &counts[r]);
    sums[r] = static_cast<float>(r + 1);
    results[r] = ncclAllReduce(&sums[r], &sums[r], 1, ncclFloat32, ncclSum, grown[r], nullptr);
  });
  for (int r = 0; r < kGrown; ++r) {
    EXPECT_EQ(results[r], ncclSuccess) << "rank " << r << ": " << ncclGetLastError(nullptr);
    EXPECT_EQ(ranks[r], r);
    EXPECT_EQ(counts[r], kGrown);
    EXPECT_EQ(sums[r], 21.0f);
    if (grown[r]) {
      EXPECT_EQ(ncclCommDestroy(grown[r]), ncclSuccess);
    }
  }
  // The id served its grow: the coordinator may make another.
  EXPECT_EQ(ncclCommGetUniqueId(comms_[0], &id), ncclSuccess);
}

TEST_F(Capi232, GrowRefusesBadArgumentsOnEveryOldRank) {
  ncclUniqueId id, plain;
  ASSERT_EQ(ncclCommGetUniqueId(comms_[0], &id), ncclSuccess);
  ASSERT_EQ(ncclGetUniqueId(&plain), ncclSuccess);
  ncclComm_t out = nullptr;
  // Joiners: a plain id, a rank among the old ones, no id.
  EXPECT_EQ(ncclCommGrow(nullptr, 6, &plain, 4, &out, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommGrow(nullptr, 6, &id, 2, &out, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommGrow(nullptr, 6, nullptr, 4, &out, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommGrow(nullptr, 4, &id, 4, &out, nullptr), ncclInvalidArgument);  // no growth
  // Old ranks that disagree on nRanks, or two coordinators: every old rank fails alike, none hangs.
  std::vector<ncclResult_t> results(kRanks);
  onThreads(kRanks, [&](int r) {
    ncclComm_t c = nullptr;
    results[r] = ncclCommGrow(comms_[r], r == 3 ? 7 : 6, r == 0 ? &id : nullptr, -1, &c, nullptr);
  });
  for (ncclResult_t r : results) EXPECT_EQ(r, ncclInvalidArgument);
  onThreads(kRanks, [&](int r) {
    ncclComm_t c = nullptr;
    results[r] = ncclCommGrow(comms_[r], 6, r < 2 ? &id : nullptr, -1, &c, nullptr);
  });
  for (ncclResult_t r : results) EXPECT_EQ(r, ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("both passed"), std::string::npos) << ncclGetLastError(nullptr);
}

}  // namespace

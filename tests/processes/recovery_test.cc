// After a rank dies the survivors go on: their failed call ends in an error naming it, they shrink it away (the
// communicator's reported failure does not reach the new one) and their next collective, renumbered, is right.
// Forked ranks over shm and tcp; the rendezvous store lives in the parent, as a framework's store outlives ranks.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process_ranks.hpp"
#include "tests/support/thread_ranks.hpp"

namespace chorus::testing {
namespace {

constexpr int kRanks = 4;
constexpr int kVictim = 2;

class Recovery : public ::testing::TestWithParam<std::string> {};

TEST_P(Recovery, SurvivorsShrinkAfterAKillAndGoOn) {
  auto results = runProcesses(kRanks, GetParam(), [](Communicator& comm) -> std::string {
    std::vector<float> buf(1 << 16, 1.0f);
    for (int it = 0;; ++it) {
      if (comm.rank() == kVictim && it == 3) kill(getpid(), SIGKILL);
      if (!comm.allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32, RedOp::sum()).isOk()) break;
      if (it > 1000) return "no error although rank 2 was killed";
    }
    const auto failed = std::chrono::steady_clock::now();
    std::unique_ptr<Communicator> survivors;
    if (Status st = comm.shrink({kVictim}, &survivors); !st.isOk()) return "shrink: " + st.message();
    const int expectedRank = comm.rank() < kVictim ? comm.rank() : comm.rank() - 1;
    if (survivors->rank() != expectedRank || survivors->size() != kRanks - 1)
      return "renumbered as " + std::to_string(survivors->rank()) + " of " + std::to_string(survivors->size());
    float x = static_cast<float>(comm.rank() + 1);
    if (Status st = survivors->allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()); !st.isOk())
      return "the first AllReduce after the shrink: " + st.message();
    if (x != 1 + 2 + 4) return "the survivors' sum is " + std::to_string(x) + ", not 7";
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - failed).count();
    fprintf(stderr, "rank %d: shrink and first AllReduce %.3f s after its error\n", comm.rank(), seconds);
    return "";
  });
  EXPECT_EQ(results[kVictim].exitCode, 128 + SIGKILL);
  for (int r = 0; r < kRanks; ++r)
    if (r != kVictim) {
      EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << ": " << results[r].message;
    }
}

// The survivors do not know who died: they agree on it, then shrink the others away.
TEST_P(Recovery, SurvivorsAgreeOnWhoIsLeftThenShrink) {
  auto results = runProcesses(kRanks, GetParam(), [](Communicator& comm) -> std::string {
    float x = 1;
    // Every rank's init is over before the kill: a rank still setting up when the others' AllReduce fails would
    // fail its init with that cause instead.
    if (Status st = comm.barrier(); !st.isOk()) return "the barrier before the kill: " + st.message();
    if (comm.rank() == kVictim) kill(getpid(), SIGKILL);
    if (comm.allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()).isOk()) return "no error without rank 2";
    uint32_t value = ~(1u << comm.rank());
    std::vector<int> members;
    if (Status st = comm.agree(&value, &members, 0.5); !st.isOk()) return "agree: " + st.message();
    if (members != std::vector<int>{0, 1, 3}) return "agreed members of " + std::to_string(members.size());
    if (value != ~(1u | 2u | 8u)) return "agreed value " + std::to_string(value);
    std::unique_ptr<Communicator> survivors;
    if (Status st = comm.shrink({kVictim}, &survivors); !st.isOk()) return "shrink: " + st.message();
    x = 1;
    if (Status st = survivors->allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()); !st.isOk() || x != 3)
      return "the AllReduce after the shrink: " + st.message() + " sum " + std::to_string(x);
    return "";
  });
  EXPECT_EQ(results[kVictim].exitCode, 128 + SIGKILL);
  for (int r = 0; r < kRanks; ++r)
    if (r != kVictim) {
      EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << ": " << results[r].message;
    }
}

// A stopped rank (a hang, not a death: its sockets stay open, its pid lives) is reported by the heartbeat within
// its timeout plus a period, on every survivor, whose waiting call then fails naming it; the survivors agree on who
// is left, shrink, and go on.
TEST_P(Recovery, AStoppedRankIsReportedByTheHeartbeatAndLeftBehind) {
  constexpr double kPeriod = 0.2, kTimeout = 1.0;
  setenv("CHORUS_HEARTBEAT_PERIOD", "0.2", 1);
  setenv("CHORUS_HEARTBEAT_TIMEOUT", "1", 1);
  setenv("CHORUS_TIMEOUT", "60", 1);
  const std::string pidFile = ::testing::TempDir() + "stopped_" + std::to_string(getpid());
  auto results = runProcesses(kRanks, GetParam(), [&](Communicator& comm) -> std::string {
    std::vector<float> buf(1024, 1.0f);
    auto lastOk = std::chrono::steady_clock::now();
    Status st;
    for (int it = 0; st.isOk(); ++it) {
      if (comm.rank() == kVictim && it == 20) {
        std::ofstream(pidFile) << getpid() << "\n";
        kill(getpid(), SIGSTOP);
      }
      st = comm.allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32, RedOp::sum());
      if (st.isOk()) lastOk = std::chrono::steady_clock::now();
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - lastOk).count();
    if (st.message().find("rank 2 sent no heartbeat") == std::string::npos) return "the error: " + st.message();
    // The silence starts somewhere in the call after the last success: within the timeout and two periods.
    if (waited > kTimeout + 2 * kPeriod + 1.5) return "reported " + std::to_string(waited) + " s after its last call";
    fprintf(stderr, "rank %d: reported %.2f s after its last successful call\n", comm.rank(), waited);
    uint32_t v = 1;
    std::vector<int> members;
    if (Status a = comm.agree(&v, &members, 0.5); !a.isOk()) return "agree: " + a.message();
    if (members != std::vector<int>{0, 1, 3}) return "agreed on " + std::to_string(members.size()) + " members";
    if (comm.rank() == 0) {
      pid_t victim = 0;
      std::ifstream(pidFile) >> victim;
      if (victim > 0) kill(victim, SIGKILL);
    }
    std::unique_ptr<Communicator> survivors;
    if (Status s = comm.shrink({kVictim}, &survivors); !s.isOk()) return "shrink: " + s.message();
    float x = 1;
    if (Status s = survivors->allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()); !s.isOk() || x != 3)
      return "after the shrink: " + s.message();
    return "";
  });
  unsetenv("CHORUS_HEARTBEAT_PERIOD");
  unsetenv("CHORUS_HEARTBEAT_TIMEOUT");
  unsetenv("CHORUS_TIMEOUT");
  std::remove(pidFile.c_str());
  EXPECT_EQ(results[kVictim].exitCode, 128 + SIGKILL);
  for (int r = 0; r < kRanks; ++r)
    if (r != kVictim) {
      EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << ": " << results[r].message;
    }
}

// A rank that is done and destroys its communicator is not silent: the others, still holding theirs, go on.
TEST(Heartbeat, ARankThatLeftIsNotReported) {
  setenv("CHORUS_HEARTBEAT_PERIOD", "0.1", 1);
  setenv("CHORUS_HEARTBEAT_TIMEOUT", "0.4", 1);
  auto results = runProcesses(3, "shm", [](Communicator& comm) -> std::string {
    std::unique_ptr<Communicator> mine;  // one the body may destroy (the harness's lives until the process ends)
    if (Status st = comm.shrink({}, &mine); !st.isOk()) return "shrink: " + st.message();
    float x = 1;
    if (Status st = mine->allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()); !st.isOk()) return st.message();
    if (mine->rank() == 1) {
      mine.reset();  // done: destroyed while the others hold theirs
      std::this_thread::sleep_for(std::chrono::milliseconds(1200));
      return "";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    Status st = mine->asyncError();
    return st.isOk() ? "" : "reported after rank 1 left: " + st.message();
  });
  unsetenv("CHORUS_HEARTBEAT_PERIOD");
  unsetenv("CHORUS_HEARTBEAT_TIMEOUT");
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << ": " << results[r].message;
}

// A revoke on one rank ends the others' waiting calls and every later call, naming it; the ranks can still shrink.
TEST_P(Recovery, ARevokeEndsEveryRanksCallsAndShrinkStillWorks) {
  auto results = runProcesses(kRanks, GetParam(), [](Communicator& comm) -> std::string {
    float x = 1;
    if (Status st = comm.allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()); !st.isOk()) return st.message();
    const auto start = std::chrono::steady_clock::now();
    if (comm.rank() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the others are waiting in the next call
      comm.revoke();
    }
    Status st = comm.allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (st.isOk()) return "a call after the revoke succeeded";
    if (st.message().find("rank 0 revoked the communicator") == std::string::npos) return "the error: " + st.message();
    if (seconds > 5) return "the waiting call ended " + std::to_string(seconds) + " s after the revoke";
    if (comm.allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()).isOk()) return "a later call succeeded";
    std::unique_ptr<Communicator> fresh;
    if (Status s = comm.shrink({}, &fresh); !s.isOk()) return "shrink: " + s.message();
    x = 1;
    if (Status s = fresh->allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()); !s.isOk() || x != kRanks)
      return "after the shrink: " + s.message();
    return "";
  });
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << ": " << results[r].message;
}

INSTANTIATE_TEST_SUITE_P(Transports, Recovery, ::testing::Values("shm", "tcp"));

TEST(Agreement, EveryRankAgreesOnTheAndOfTheValues) {
  std::vector<uint32_t> values(5);
  std::vector<std::vector<int>> members(5);
  onThreads(5, [&](Communicator& comm) {
    for (int round = 0; round < 3; ++round) {  // rounds keep apart
      uint32_t v = 0xff00u | (1u << comm.rank()) | (round == 1 ? 0 : 0x10000u);
      ASSERT_TRUE(comm.agree(&v, &members[comm.rank()], 5.0).isOk());
      values[comm.rank()] = v;
      ASSERT_EQ(v, round == 1 ? 0xff00u : 0x1ff00u) << "round " << round;
    }
  });
  for (const auto& m : members) EXPECT_EQ(m, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(Agreement, ALateRankIsLeftOutByEveryoneAlike) {
  std::vector<std::string> outcome(4);
  onThreads(4, [&](Communicator& comm) {
    if (comm.rank() == 3) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    uint32_t v = 7;
    std::vector<int> members;
    Status st = comm.agree(&v, &members, 0.3);
    outcome[comm.rank()] = st.isOk() ? std::to_string(members.size()) + " members" : st.message();
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(outcome[r], "3 members") << "rank " << r;
  EXPECT_NE(outcome[3].find("voted after the others had decided without it"), std::string::npos) << outcome[3];
}

TEST(Agreement, BadArgumentsAreNamed) {
  onThreads(1, [](Communicator& comm) {
    uint32_t v = 0;
    std::vector<int> m;
    EXPECT_EQ(comm.agree(nullptr, &m).code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(comm.agree(&v, &m, 0).code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(comm.agree(&v, &m).isOk());
    EXPECT_EQ(m, std::vector<int>{0});
  });
}

// A rank killed at a random moment around the agreement: every survivor returns in bounded time, and all return
// the same decision (with the victim counted in if its vote was in before the decision, else without it), also when
// the victim dies between proposing a decision and reading it.
TEST(Agreement, AKillAtARandomMomentLeavesTheSurvivorsOfOneMind) {
  const std::string dir = ::testing::TempDir() + "agree_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  for (int trial = 0; trial < 8; ++trial) {
    const int delayUs = trial * 1000;  // before, during and after the victim's vote and its proposal
    auto results = runProcesses(
        kRanks, "shm",
        [&](Communicator& comm) -> std::string {
          if (comm.rank() == kVictim)
            std::thread([delayUs] {
              std::this_thread::sleep_for(std::chrono::microseconds(delayUs));
              kill(getpid(), SIGKILL);
            }).detach();
          uint32_t v = 1;
          std::vector<int> members;
          if (Status st = comm.agree(&v, &members, 0.5); !st.isOk()) return "agree: " + st.message();
          std::string list;
          for (int m : members) list += std::to_string(m) + " ";
          std::ofstream(dir + "/rank" + std::to_string(comm.rank())) << list;
          if (comm.rank() == kVictim) pause();  // the kill comes
          return "";
        },
        60);
    std::set<std::string> decisions;
    for (int r = 0; r < kRanks; ++r) {
      if (r == kVictim) continue;
      EXPECT_EQ(results[r].exitCode, 0) << "trial " << trial << ", rank " << r << ": " << results[r].message;
      std::ifstream in(dir + "/rank" + std::to_string(r));
      std::string list;
      std::getline(in, list);
      decisions.insert(list);
    }
    EXPECT_EQ(decisions.size(), 1u) << "trial " << trial << ": the survivors decided differently";
    EXPECT_TRUE(decisions.count("0 1 3 ") || decisions.count("0 1 2 3 ")) << *decisions.begin();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace chorus::testing

// A rank whose init fails, or whose process dies inside init, fails every other rank's init within a second, with
// an error naming that rank, instead of at CHORUS_TIMEOUT naming a store key.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process_ranks.hpp"

namespace chorus::testing {
namespace {

constexpr int kRanks = 4;
constexpr int kFailing = 2;

std::string succeed(Communicator&) { return ""; }

class InitFailure : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { setenv("CHORUS_TIMEOUT", "30", 1); }
  void TearDown() override { unsetenv("CHORUS_TIMEOUT"); }
};

TEST_P(InitFailure, ARankWhoseInitFailsFailsTheOthersAtOnce) {
  auto results = runProcesses(kRanks, GetParam(), succeed, 60, nullptr, [](int rank) {
    // A transport this rank cannot have: its init fails after it joined the rendezvous.
    if (rank == kFailing) setenv("CHORUS_TRANSPORT", "carrier-pigeon", 1);
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_NE(results[r].exitCode, 0) << "rank " << r;
    // 30 s is the timeout; a second after the failing rank's own end is what is promised (2 s allows for 4 ranks
    // starting on 2 cores).
    EXPECT_LT(results[r].secondsToExit, results[kFailing].secondsToExit + 1.0) << "rank " << r;
    EXPECT_LT(results[r].secondsToExit, 5.0) << "rank " << r;
    if (r != kFailing) {
      EXPECT_NE(results[r].message.find("rank 2 failed its init"), std::string::npos) << results[r].message;
      EXPECT_NE(results[r].message.find("carrier-pigeon"), std::string::npos) << results[r].message;
    }
  }
}

std::set<std::string> chorusEntriesInDevShm() {
  std::set<std::string> names;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind("chorus-", 0) == 0) names.insert(e->d_name);
    closedir(d);
  }
  return names;
}

// A rank that arrives after the others already failed and left still gets the cause at once: the root waits for
// every rank of the communicator (up to the timeout) before it ends.
TEST_P(InitFailure, ALateRankStillLearnsTheCause) {
  auto results = runProcesses(kRanks, GetParam(), succeed, 60, nullptr, [](int rank) {
    if (rank == kFailing) setenv("CHORUS_TRANSPORT", "carrier-pigeon", 1);
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  });
  EXPECT_NE(results[1].exitCode, 0);
  EXPECT_LT(results[1].secondsToExit, 3.0) << results[1].message;
  EXPECT_NE(results[1].message.find("rank 2 failed its init"), std::string::npos) << results[1].message;
}

// The rank is killed at a random moment of its init. When it had joined the rendezvous, the others learn at once
// that it left; when it was killed before, nobody can tell it from a late rank, and they end at the timeout,
// naming it. Either way every survivor fails, and names rank 2.
TEST_P(InitFailure, ARankKilledDuringInitIsNamed) {
  setenv("CHORUS_TIMEOUT", "4", 1);
  const std::set<std::string> before = chorusEntriesInDevShm();
  std::mt19937 random(std::random_device{}());
  int fast = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const int killAfterMs = std::uniform_int_distribution<int>(0, 40)(random);
    auto results = runProcesses(kRanks, GetParam(), succeed, 60, nullptr, [killAfterMs](int rank) {
      if (rank != kFailing) return;
      std::thread([killAfterMs] {
        std::this_thread::sleep_for(std::chrono::milliseconds(killAfterMs));
        raise(SIGKILL);
      }).detach();
    });
    if (results[kFailing].exitCode == 0) continue;  // it finished before the kill
    ASSERT_EQ(results[kFailing].exitCode, 128 + SIGKILL) << "trial " << trial;
    bool allFast = true;
    for (int r = 0; r < kRanks; ++r) {
      if (r == kFailing) continue;
      if (results[r].exitCode == 0) continue;  // it finished its init before the kill: nothing to tell it then
      EXPECT_NE(results[r].message.find("rank 2"), std::string::npos)
          << "trial " << trial << ": " << results[r].message;
      EXPECT_LT(results[r].secondsToExit, 4.0 + 3.0) << "trial " << trial;
      allFast = allFast && results[r].secondsToExit < results[kFailing].secondsToExit + 1.0;
    }
    fast += allFast ? 1 : 0;
  }
  std::printf("trials in which every survivor learned within a second: %d of 6\n", fast);
  // Nothing in /dev/shm, whenever the kill came (before, 6-11 segments of 12 ranks stayed in 7 trials of 7).
  for (const std::string& name : chorusEntriesInDevShm()) EXPECT_TRUE(before.count(name)) << "left: " << name;
}

INSTANTIATE_TEST_SUITE_P(Transports, InitFailure, ::testing::ValuesIn(processTransports()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace chorus::testing

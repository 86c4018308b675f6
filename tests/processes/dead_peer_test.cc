// A rank killed in the middle of a call, among 8: every survivor, also those that never talk to it directly, gets
// an error within a second (ten over ucx), naming the killed rank, even when every survivor keeps its communicator open
// after its error (the neighbours' failures travel on: a failing rank closes its connections, and the first cause is
// kept by the rendezvous store for the others' messages).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/support/process_ranks.hpp"

namespace chorus::testing {
namespace {

constexpr int kRanks = 8;
constexpr int kVictim = 3;
constexpr double kKeptOpenSeconds = 2.0;  // each survivor holds its communicator this long after its error

// shm and tcp close at once (a flag, a socket's end); ucx closes with a message that needs progress on both sides,
// and its failures reach the far side of the ring in 1-1.5 s when 8 ranks share 2 busy cores.
// Under AddressSanitizer a survivor's exit, which the measure below ends with, runs LeakSanitizer's scan of the
// whole heap first: 0.01-0.26 s past the second when 8 ranks shared 2 busy cores.
#if defined(__SANITIZE_ADDRESS__)
constexpr double kExitScanSeconds = 1.0;
#else
constexpr double kExitScanSeconds = 0.0;
#endif
double secondsToLearn(const std::string& transport) { return (transport == "ucx" ? 10.0 : 1.0) + kExitScanSeconds; }

using Call = std::function<Status(Communicator&, std::vector<float>&)>;

Status ringAllReduce(Communicator& c, std::vector<float>& b) {
  return c.allReduce(b.data(), b.data(), b.size(), DataType::kFloat32, RedOp::sum());
}
Status broadcastFromZero(Communicator& c, std::vector<float>& b) {
  return c.broadcast(b.data(), b.data(), b.size(), DataType::kFloat32, 0);
}
Status sendRecvRing(Communicator& c, std::vector<float>& b) {
  const int n = c.size(), r = c.rank();
  std::vector<float> in(b.size());
  Status begin = groupStart();
  Status s1 = c.send(b.data(), b.size(), DataType::kFloat32, (r + 1) % n);
  Status s2 = c.recv(in.data(), in.size(), DataType::kFloat32, (r + n - 1) % n);
  Status end = groupEnd();
  return !begin.isOk() ? begin : !s1.isOk() ? s1 : !s2.isOk() ? s2 : end;
}

class DeadPeer : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(DeadPeer, EverySurvivorLearnsWithinASecondNamingIt) {
  const auto& [transport, callIndex] = GetParam();
  const Call calls[] = {ringAllReduce, broadcastFromZero, sendRecvRing};
  const Call call = calls[callIndex];
  setenv("CHORUS_TIMEOUT", "30", 1);
  auto results = runProcesses(
      kRanks, transport,
      [&](Communicator& comm) -> std::string {
        std::vector<float> buf(4 << 20, 1.0f);
        for (int it = 0; it < 1000; ++it) {
          if (comm.rank() == kVictim && it == 2) kill(getpid(), SIGKILL);
          Status st = call(comm, buf);
          if (st.isOk()) continue;
          // Holding the communicator open: the error must not depend on this rank's exit.
          std::this_thread::sleep_for(std::chrono::duration<double>(kKeptOpenSeconds));
          return "error: " + st.message();
        }
        return "no error although a rank was killed";
      },
      90);
  unsetenv("CHORUS_TIMEOUT");
  ASSERT_EQ(results[kVictim].exitCode, 128 + SIGKILL);
  for (int r = 0; r < kRanks; ++r) {
    if (r == kVictim) continue;
    const double learned = results[r].secondsToExit - kKeptOpenSeconds - results[kVictim].secondsToExit;
    EXPECT_LT(learned, secondsToLearn(transport)) << "rank " << r << ": " << results[r].message;
    EXPECT_NE(results[r].message.find("rank 3"), std::string::npos) << "rank " << r << ": " << results[r].message;
  }
}

std::string caseName(const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
  static const char* const kNames[] = {"AllReduce", "Broadcast", "SendRecvRing"};
  return std::get<0>(info.param) + "_" + kNames[std::get<1>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(Calls, DeadPeer,
                         ::testing::Combine(::testing::ValuesIn(processTransports()), ::testing::Values(0, 1, 2)),
                         caseName);

// The rendezvous store lives in rank 0's process (as when rank 0 made the UniqueId, or holds torch's TCPStore), and
// rank 0 exits: the survivors' errors name rank 0, not the store's lost connection, which is no cause of anything.
TEST(DeadPeer, SurvivorsNameTheRankThatHeldTheStore) {
  constexpr int kN = 3;
  int idPipes[kN][2], reports[kN][2], created[2];
  std::vector<pid_t> pids;
  ASSERT_EQ(pipe(created), 0);
  for (int r = 0; r < kN; ++r) {
    ASSERT_EQ(pipe(idPipes[r]), 0);
    ASSERT_EQ(pipe(reports[r]), 0);
  }
  for (int r = 0; r < kN; ++r) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid > 0) {
      pids.push_back(pid);
      continue;
    }
    UniqueId id;
    if (r == 0) {
      if (!UniqueId::create(&id).isOk()) _exit(2);
      for (int peer = 1; peer < kN; ++peer)
        if (write(idPipes[peer][1], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) _exit(2);
    } else {
      pollfd p{idPipes[r][0], POLLIN, 0};
      if (poll(&p, 1, 30000) != 1 || read(idPipes[r][0], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) _exit(2);
    }
    std::unique_ptr<Communicator> comm;
    if (!Communicator::create(id, kN, r, &comm).isOk()) _exit(3);
    if (r == 0) {
      // Once every rank's init has returned (the store answers the last step of init after rank 0's own returns).
      for (int peer = 1; peer < kN; ++peer) {
        char made;
        pollfd p{created[0], POLLIN, 0};
        if (poll(&p, 1, 30000) != 1 || read(created[0], &made, 1) != 1) _exit(2);
      }
      _exit(1);  // as on an error of its own, with its store
    }
    if (write(created[1], "c", 1) != 1) _exit(2);
    std::vector<float> buf(4, 1.0f);
    Status st = comm->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32, RedOp::sum());
    const std::string message = st.isOk() ? "no error" : st.message();
    if (write(reports[r][1], message.data(), message.size()) < 0) _exit(5);
    _exit(0);
  }
  for (int r = 0; r < kN; ++r) close(reports[r][1]);
  for (int r = 0; r < kN; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    EXPECT_TRUE(WIFEXITED(status)) << "rank " << r;
    EXPECT_EQ(WEXITSTATUS(status), r == 0 ? 1 : 0) << "rank " << r;
    if (r == 0) continue;
    std::string message(4096, '\0');
    const ssize_t n = read(reports[r][0], message.data(), message.size());
    message.resize(n > 0 ? n : 0);
    EXPECT_NE(message.find("rank 0"), std::string::npos) << "rank " << r << ": " << message;
    EXPECT_EQ(message.find("bootstrap root"), std::string::npos) << "rank " << r << ": " << message;
  }
}

}  // namespace
}  // namespace chorus::testing

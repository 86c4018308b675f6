// Listeners under pressure: the rendezvous root and a rank's tcp listener close connections that never say hello
// within about a second, read many handshakes side by side, and back off instead of spinning when file
// descriptors run out.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/id_layout.hpp"
#include "bootstrap/socket.hpp"
#include "tests/support/process_ranks.hpp"
#include "transports/tcp/acceptor.hpp"

namespace chorus::testing {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<int> idleConnections(const net::Endpoint& to, int n) {
  std::vector<int> fds(n, -1);
  for (int& fd : fds) EXPECT_TRUE(net::connectTo(to, Deadline::after(5), &fd).isOk());
  return fds;
}

// Seconds until the other end closes `fd` (or `limit` when it does not).
double secondsUntilClosed(int fd, double limit) {
  const auto start = Clock::now();
  char byte;
  while (secondsSince(start) < limit) {
    if (recv(fd, &byte, 1, MSG_DONTWAIT) == 0) return secondsSince(start);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return limit;
}

TEST(RootListener, IdleConnectionsAreClosedAndInitGoesOn) {
  std::vector<int> idle;
  auto idWithIdleConnections = [&idle](UniqueId* id) -> Status {
    CHORUS_TRY(UniqueId::create(id));
    bootstrap::IdLayout l = bootstrap::decodeId(*id);
    idle = idleConnections({l.rootIp, l.rootPort}, 60);
    return Status::ok();
  };
  const auto start = Clock::now();
  auto results = runProcesses(
      2, "shm", [](Communicator&) { return std::string(); }, 60, idWithIdleConnections);
  for (auto& r : results) EXPECT_EQ(r.exitCode, 0);
  EXPECT_LT(secondsSince(start), 3.0) << "init took as long as the idle connections were held";
  for (int& fd : idle) {
    EXPECT_LT(secondsUntilClosed(fd, 5.0), 5.0) << "an idle connection stayed open";
    net::closeFd(fd);
  }
}

// A rank's tcp setup: three silent connections and two real peers' sockets arrive together.
TEST(TcpListener, SilentConnectionsDoNotHoldTheSetup) {
  int listenFd = -1;
  net::Endpoint at;
  ASSERT_TRUE(net::listenOn(htonl(INADDR_LOOPBACK), 0, &listenFd, &at).isOk());
  std::vector<int> idle = idleConnections(at, 3);
  transport::tcp::Expected expected{42, 0, {1, 2}, 1};
  std::vector<int> dialed;
  for (int rank : {1, 2}) {
    int fd = -1;
    ASSERT_TRUE(net::connectTo(at, Deadline::after(5), &fd).isOk());
    transport::tcp::Hello hello{transport::tcp::kHelloMagic, 42, rank, 0};
    ASSERT_TRUE(net::sendAll(fd, &hello, sizeof(hello), Deadline::after(5)).isOk());
    dialed.push_back(fd);
  }
  std::vector<std::vector<int>> fds(2, std::vector<int>(1, -1));
  const auto start = Clock::now();
  Status st = transport::tcp::acceptPeers(
      listenFd, expected, Deadline::after(30), [] { return Status::ok(); }, &fds);
  EXPECT_TRUE(st.isOk()) << st.message();
  EXPECT_LT(secondsSince(start), 1.5);
  for (auto& row : fds)
    for (int& fd : row) net::closeFd(fd);
  for (int& fd : idle) {
    EXPECT_LT(secondsUntilClosed(fd, 3.0), 3.0) << "a silent connection stayed open";
    net::closeFd(fd);
  }
  for (int& fd : dialed) net::closeFd(fd);
  net::closeFd(listenFd);
}

TEST(TcpListener, AnotherRanksFailedSetupEndsTheWait) {
  int listenFd = -1;
  net::Endpoint at;
  ASSERT_TRUE(net::listenOn(htonl(INADDR_LOOPBACK), 0, &listenFd, &at).isOk());
  std::vector<std::vector<int>> fds(1, std::vector<int>(2, -1));
  const auto start = Clock::now();
  Status st = transport::tcp::acceptPeers(
      listenFd, {7, 0, {1}, 2}, Deadline::after(30), [] { return remoteError("rank 1 failed its init: no memory"); },
      &fds);
  EXPECT_EQ(st.message(), "rank 1 failed its init: no memory");
  EXPECT_LT(secondsSince(start), 1.0);
  net::closeFd(listenFd);
}

// Out of descriptors with a peer's connection waiting in the backlog: the wait sleeps between tries (little CPU)
// and ends at its deadline saying why.
TEST(TcpListener, RunningOutOfDescriptorsBacksOffAndSaysSo) {
  pid_t child = fork();
  if (child == 0) {
    int listenFd = -1;
    net::Endpoint at;
    if (!net::listenOn(htonl(INADDR_LOOPBACK), 0, &listenFd, &at).isOk()) _exit(2);
    int dialer = -1;
    if (!net::connectTo(at, Deadline::after(5), &dialer).isOk()) _exit(3);
    // Use up every descriptor below the limit.
    rlimit limit{64, 64};
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(4);
    while (dup(0) >= 0) {
    }
    std::vector<std::vector<int>> fds(1, std::vector<int>(1, -1));
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    Status st = transport::tcp::acceptPeers(
        listenFd, {7, 0, {1}, 1}, Deadline::after(2), [] { return Status::ok(); }, &fds);
    getrusage(RUSAGE_SELF, &after);
    auto cpu = [](const rusage& u) {
      return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
             static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
    };
    const bool named = st.message().find("ran out of file descriptors") != std::string::npos;
    const bool calm = cpu(after) - cpu(before) < 0.5;  // a spin would burn the whole 2 s
    _exit(st.code() == ErrorCode::kTimeout && named && calm ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

}  // namespace
}  // namespace chorus::testing

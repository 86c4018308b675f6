// A process that runs rendezvous roots may fork at any time (bootstrap/root_threads.hpp): the child must not inherit
// a lock a root thread held at that instant. Here the test's process makes ids one after another while a client
// process sets up a communicator on each (so each root serves, then ends), and forks a child right after each id at
// staggered delays; every child must run and exit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chorus/communicator.hpp"

namespace chorus::testing {
namespace {

// Waits up to `seconds` for `pid`; kills it and returns -1 when it has not exited by then.
int exitCodeWithin(pid_t pid, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// Reads ids from `ids` until it closes; makes a one-rank communicator of each and runs one call on it.
[[noreturn]] void setUpCommunicators(int ids) {
  UniqueId id;
  int failures = 0;
  while (read(ids, id.bytes.data(), id.bytes.size()) == static_cast<ssize_t>(id.bytes.size())) {
    std::unique_ptr<Communicator> comm;
    int v = 1;
    failures += !Communicator::create(id, 1, 0, &comm).isOk() ||
                !comm->allReduce(&v, &v, 1, DataType::kInt32, RedOp::sum()).isOk();
  }
  _exit(failures == 0 ? 0 : 1);
}

TEST(RootThreads, AChildForkedWhileRootsServeAndEndRuns) {
  int pipeEnds[2];
  ASSERT_EQ(pipe(pipeEnds), 0);
  const pid_t client = fork();
  ASSERT_GE(client, 0);
  if (client == 0) {
    close(pipeEnds[1]);
    setUpCommunicators(pipeEnds[0]);
  }
  close(pipeEnds[0]);
  int hung = 0, failed = 0;
  for (int i = 0; i < 300 && hung == 0; ++i) {
    UniqueId id;
    ASSERT_TRUE(UniqueId::create(&id).isOk());
    ASSERT_EQ(write(pipeEnds[1], id.bytes.data(), id.bytes.size()), static_cast<ssize_t>(id.bytes.size()));
    std::this_thread::sleep_for(std::chrono::microseconds(50 * (i % 40)));
    const pid_t pid = fork();
    if (pid == 0) {
      std::vector<std::string> allocations;
      for (int k = 0; k < 64; ++k) allocations.emplace_back(std::string(100 + k, 'x'));
      _exit(allocations.size() == 64 ? 0 : 1);
    }
    ASSERT_GT(pid, 0);
    const int code = exitCodeWithin(pid, 20);
    hung += code == -1;
    failed += code > 0;
  }
  close(pipeEnds[1]);
  EXPECT_EQ(exitCodeWithin(client, 60), 0) << "the client process failed to set up a communicator";
  EXPECT_EQ(hung, 0) << "a child forked while roots served never exited";
  EXPECT_EQ(failed, 0);
}

// The child of a process whose roots have run makes ids and communicators of its own (a tool forking its ranks
// after a first measurement, a worker pool forked after init): the fork gate must be free in the child.
TEST(RootThreads, AChildForkedAfterRootsMakesIdsOfItsOwn) {
  UniqueId first;
  ASSERT_TRUE(UniqueId::create(&first).isOk());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int failures = 0;
    for (int i = 0; i < 3; ++i) {
      UniqueId id;
      std::unique_ptr<Communicator> comm;
      int v = 1;
      failures += !UniqueId::create(&id).isOk() || !Communicator::create(id, 1, 0, &comm).isOk() ||
                  !comm->allReduce(&v, &v, 1, DataType::kInt32, RedOp::sum()).isOk();
    }
    _exit(failures == 0 ? 0 : 1);
  }
  EXPECT_EQ(exitCodeWithin(pid, 30), 0) << "-1: the child hung making an id";
}

}  // namespace
}  // namespace chorus::testing

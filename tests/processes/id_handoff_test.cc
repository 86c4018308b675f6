// Forked local ranks get their id from the parent after the fork (bootstrap/id_handoff.hpp): every child gets the
// same whole id, and a parent that makes none, or stalls, fails its children with a message instead of a hang.
#include "bootstrap/id_handoff.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/settings.hpp"

namespace chorus::testing {
namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  pid_t pid = -1;
  int output = -1;  // what the child wrote: the id's bytes, or its error
};

// Forks a child that runs `receive` on `handoff` and writes what it got to a pipe.
Child forkReceiver(bootstrap::IdHandoff& handoff, double timeoutSeconds) {
  int ends[2];
  EXPECT_EQ(pipe(ends), 0);
  Child child;
  child.pid = fork();
  if (child.pid == 0) {
    close(ends[0]);
    setenv("CHORUS_TIMEOUT", std::to_string(timeoutSeconds).c_str(), 1);
    reloadSettings();
    UniqueId id;
    Status st = handoff.receive(&id);
    const std::string out = st.isOk() ? std::string(id.bytes.data(), id.bytes.size()) : "error: " + st.message();
    (void)!write(ends[1], out.data(), out.size());
    _exit(st.isOk() ? 0 : 1);
  }
  close(ends[1]);
  child.output = ends[0];
  return child;
}

std::string finish(const Child& child) {
  std::string out;
  char buffer[512];
  ssize_t got;
  while ((got = read(child.output, buffer, sizeof(buffer))) > 0) out.append(buffer, static_cast<size_t>(got));
  close(child.output);
  int status = 0;
  waitpid(child.pid, &status, 0);
  return out;
}

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST(IdHandoff, EveryChildGetsTheWholeIdMadeAfterTheFork) {
  bootstrap::IdHandoff handoff;
  ASSERT_TRUE(handoff.open().isOk());
  std::vector<Child> children;
  for (int c = 0; c < 5; ++c) children.push_back(forkReceiver(handoff, 30));
  UniqueId id;
  ASSERT_TRUE(handoff
                  .handOver(
                      [&id](UniqueId* made) {
                        CHORUS_TRY(UniqueId::create(made));
                        id = *made;
                        return Status::ok();
                      },
                      static_cast<int>(children.size()))
                  .isOk());
  for (const Child& child : children) EXPECT_EQ(finish(child), std::string(id.bytes.data(), id.bytes.size()));
}

TEST(IdHandoff, AParentWithNoIdEndsItsChildrenAtOnce) {
  bootstrap::IdHandoff handoff;
  ASSERT_TRUE(handoff.open().isOk());
  std::vector<Child> children{forkReceiver(handoff, 30), forkReceiver(handoff, 30)};
  const auto start = Clock::now();
  handoff.close();
  for (const Child& child : children) {
    EXPECT_EQ(finish(child), "error: the launching process gave no communicator id (it failed to make one, or ended)");
  }
  EXPECT_LT(secondsSince(start), 5.0);
}

TEST(IdHandoff, AStalledParentIsATimeoutNamingIt) {
  bootstrap::IdHandoff handoff;
  ASSERT_TRUE(handoff.open().isOk());
  Child child = forkReceiver(handoff, 1);
  const auto start = Clock::now();
  const std::string out = finish(child);  // the parent keeps its end open and sends nothing
  EXPECT_NE(out.find("no communicator id from the launching process (pid " + std::to_string(getpid()) + ")"),
            std::string::npos)
      << out;
  EXPECT_GE(secondsSince(start), 0.9);
  EXPECT_LT(secondsSince(start), 10.0);
}

}  // namespace
}  // namespace chorus::testing

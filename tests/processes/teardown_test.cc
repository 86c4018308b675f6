// How communicators end: a rank that leaves right after a call must not make a peer that is still finishing the
// same call report an error, and ending leaves nothing behind.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process_ranks.hpp"

namespace chorus::testing {
namespace {

// The first rank to finish a large tcp AllReduce exits at once while its peer still reads the last direct transfer
// from its socket: the peer must read those bytes, not report "closed the tcp connection" (before the fix, 4 runs
// in 10 at 1 MiB).
TEST(Teardown, ExitRightAfterALargeTcpCallIsNoErrorForThePeer) {
  for (int run = 0; run < 12; ++run) {
    for (int nranks : {2, 4, 8}) {
      const size_t count = size_t{1} << 18;
      auto results = runProcesses(nranks, "tcp", [count](Communicator& comm) -> std::string {
        std::vector<float> data(count, static_cast<float>(comm.rank() + 1));
        Status st = comm.allReduce(data.data(), data.data(), count, DataType::kFloat32, RedOp{});
        if (!st.isOk()) return st.message();
        const float sum = static_cast<float>(comm.size() * (comm.size() + 1) / 2);
        return data[count - 1] == sum && data[0] == sum ? "" : "wrong sum";
      });
      for (size_t r = 0; r < results.size(); ++r)
        ASSERT_EQ(results[r].exitCode, 0) << "rank " << r << ", run " << run << ", " << nranks << " ranks";
    }
  }
}

int entriesIn(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

// Each UniqueId runs a rendezvous root (a thread and a listening socket) in the process that made it; it ends
// when the last communicator made from the id is gone, so create/destroy cycles leave nothing behind (before,
// 200 cycles left 200 threads and 200 sockets, and the 118th init failed under ulimit -n 128).
TEST(Teardown, TheRootEndsWithItsLastCommunicator) {
  const int threadsBefore = entriesIn("/proc/self/task");
  const int fdsBefore = entriesIn("/proc/self/fd");
  for (int cycle = 0; cycle < 40; ++cycle) {
    UniqueId id;
    ASSERT_TRUE(UniqueId::create(&id).isOk());
    std::unique_ptr<Communicator> comm;
    ASSERT_TRUE(Communicator::create(id, 1, 0, &comm).isOk());
    int v = 1;
    ASSERT_TRUE(comm->allReduce(&v, &v, 1, DataType::kInt32, RedOp::sum()).isOk());
  }
  // The roots notice the last disconnection within a poll round.
  for (int wait = 0; wait < 200 && entriesIn("/proc/self/task") > threadsBefore; ++wait)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_LE(entriesIn("/proc/self/task"), threadsBefore);
  EXPECT_LE(entriesIn("/proc/self/fd"), fdsBefore + 2);  // logging may have opened a file
}

// 1,000 communicators split off, used and destroyed in turn on each of 2 processes, over shm and tcp: open files,
// threads, this process's /dev/shm segments and resident memory stay where they were after the first 50.
// AddressSanitizer keeps freed blocks in its quarantine (up to 256 MiB) before reusing them, so resident memory is
// judged only without it; with it, LeakSanitizer looks for blocks nothing points to any more.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kResidentMemoryIsJudged = false;
bool leaksFound() { return __lsan_do_recoverable_leak_check() != 0; }
#else
constexpr bool kResidentMemoryIsJudged = true;
bool leaksFound() { return false; }
#endif
class SplitCycles : public ::testing::TestWithParam<std::string> {};

TEST_P(SplitCycles, AThousandLeaveNothingBehind) {
  const std::string transport = GetParam();
  {
    auto results = runProcesses(
        2, transport,
        [](Communicator& comm) -> std::string {
          auto shmSegments = [] {
            int n = 0;
            const std::string prefix = "chorus-" + std::to_string(getpid()) + "-";
            if (DIR* d = opendir("/dev/shm")) {
              while (dirent* e = readdir(d)) n += std::string(e->d_name).rfind(prefix, 0) == 0;
              closedir(d);
            }
            return n;
          };
          auto residentMiB = [] {
            long pages = 0, resident = 0;
            if (FILE* f = fopen("/proc/self/statm", "r")) {
              if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
              fclose(f);
            }
            return resident * (sysconf(_SC_PAGESIZE) / 1024) / 1024.0;
          };
          int fds = 0, threads = 0, segments = 0;
          double resident = 0;
          for (int cycle = 0; cycle < 1000; ++cycle) {
            if (cycle == 50) {
              fds = entriesIn("/proc/self/fd"), threads = entriesIn("/proc/self/task"), segments = shmSegments();
              resident = residentMiB();
            }
            std::unique_ptr<Communicator> child;
            if (Status st = comm.split(0, comm.rank(), &child); !st.isOk()) return "split: " + st.message();
            float v = 1;
            if (Status st = child->allReduce(&v, &v, 1, DataType::kFloat32, RedOp::sum()); !st.isOk() || v != 2)
              return "cycle " + std::to_string(cycle) + ": " + (st.isOk() ? "a wrong sum" : st.message());
          }
          std::string grew;
          if (entriesIn("/proc/self/fd") > fds)
            grew += " open files " + std::to_string(fds) + " -> " + std::to_string(entriesIn("/proc/self/fd"));
          if (entriesIn("/proc/self/task") > threads)
            grew += " threads " + std::to_string(threads) + " -> " + std::to_string(entriesIn("/proc/self/task"));
          if (shmSegments() > segments)
            grew += " /dev/shm segments " + std::to_string(segments) + " -> " + std::to_string(shmSegments());
          if (kResidentMemoryIsJudged && residentMiB() > resident + 16)
            grew += " resident memory " + std::to_string(resident) + " -> " + std::to_string(residentMiB()) + " MiB";
          if (leaksFound()) grew += " leaks (LeakSanitizer's report above)";
          return grew.empty() ? "" : "after 1000 cycles:" + grew;
        },
        500);
    for (int r = 0; r < 2; ++r)
      EXPECT_EQ(results[r].exitCode, 0) << transport << " rank " << r << ": " << results[r].message;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, SplitCycles, ::testing::Values("shm", "tcp"));

}  // namespace
}  // namespace chorus::testing

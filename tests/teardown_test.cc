// How communicators end: a rank that leaves right after a call must not make a peer that is still finishing the
// same call report an error, and ending leaves nothing behind.
#include <dirent.h>
#include <gtest/gtest.h>

#include <chrono>
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

}  // namespace
}  // namespace chorus::testing

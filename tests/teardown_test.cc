// How communicators end: a rank that leaves right after a call must not make a peer that is still finishing the
// same call report an error, and ending leaves nothing behind.
#include <gtest/gtest.h>

#include <string>
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

}  // namespace
}  // namespace chorus::testing

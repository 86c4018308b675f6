// Mismatched calls across ranks and what follows them, as processes over shm and tcp: each mismatch fails the call
// on both ranks with both sides' arguments in the message, and the communicator is then poisoned (every later call
// fails at once with the cause) instead of returning success with another call's bytes. A rank that only sent in a
// collective does not wait for its peer's header (execution.cc, armHeaders), so over shm it learns of the mismatch
// at its next call with that peer. A rank that times out leaves its peer an error too, never wrong data.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/process_ranks.hpp"

namespace chorus::testing {
namespace {

class Mismatch : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs `call` (given this rank) on two process ranks; each must fail, with `expected` in its message, and the
  // next, matching AllReduce must fail too, naming the earlier failure.
  void expectBothFail(const std::function<Status(Communicator&, int)>& call, const std::string& expected) {
    auto results = runProcesses(2, GetParam(), [&](Communicator& comm) -> std::string {
      Status st = call(comm, comm.rank());
      if (st.isOk()) return "the mismatched call succeeded";
      if (st.message().find(expected) == std::string::npos) return "unexpected message: " + st.message();
      std::vector<float> data(64, 1.0f);
      Status next = comm.allReduce(data.data(), data.data(), data.size(), DataType::kFloat32, RedOp{});
      if (next.isOk()) return "a call after the mismatch succeeded";
      if (next.message().find("earlier call failed") == std::string::npos)
        return "the call after the mismatch: " + next.message();
      if (comm.asyncError().isOk()) return "asyncError reports success after the mismatch";
      return "";
    });
    for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
  }
};

TEST_P(Mismatch, CountsDiffer) {
  std::vector<float> data(1000000, 1.0f);
  expectBothFail(
      [&](Communicator& c, int rank) {
        return c.allReduce(data.data(), data.data(), rank == 0 ? 1000000 : 1000, DataType::kFloat32, RedOp{});
      },
      "count 1000000");
}

TEST_P(Mismatch, SmallCountsDiffer) {
  std::vector<float> data(64, 1.0f);
  expectBothFail(
      [&](Communicator& c, int rank) {
        return c.allReduce(data.data(), data.data(), rank == 0 ? 2 : 3, DataType::kFloat32, RedOp{});
      },
      "mismatched calls");
}

TEST_P(Mismatch, DatatypesOfTheSameSizeDiffer) {
  std::vector<float> data(4096, 1.0f);
  expectBothFail(
      [&](Communicator& c, int rank) {
        return c.allReduce(data.data(), data.data(), data.size(), rank == 0 ? DataType::kFloat32 : DataType::kInt32,
                           RedOp{});
      },
      "int32");
}

TEST_P(Mismatch, OpsDiffer) {
  std::vector<float> data(16, 1.0f);
  expectBothFail(
      [&](Communicator& c, int rank) {
        RedOp op{rank == 0 ? RedOpKind::kSum : RedOpKind::kMax, 1.0};
        return c.allReduce(data.data(), data.data(), data.size(), DataType::kFloat32, op);
      },
      "max");
}

// Both ranks believe they are the root, so both only send. Where the call does not wait for the peer's header
// (shm), it returns success, having taken no byte, and the next call with that peer fails naming the mismatch; then
// the communicator is poisoned as after any failed call.
TEST_P(Mismatch, BroadcastRootsDiffer) {
  auto results = runProcesses(2, GetParam(), [](Communicator& comm) -> std::string {
    std::vector<float> data(4096, static_cast<float>(comm.rank() + 1));
    Status st = comm.broadcast(data.data(), data.data(), data.size(), DataType::kFloat32, comm.rank());
    if (data[0] != static_cast<float>(comm.rank() + 1)) return "a root's buffer changed";
    if (st.isOk()) {
      st = comm.allReduce(data.data(), data.data(), data.size(), DataType::kFloat32, RedOp{});
      if (st.isOk()) return "the call after the mismatched Broadcast succeeded";
    }
    if (st.message().find("mismatched calls") == std::string::npos) return "unexpected message: " + st.message();
    if (st.message().find("Broadcast") == std::string::npos) return "the Broadcast is not named: " + st.message();
    Status next = comm.allReduce(data.data(), data.data(), data.size(), DataType::kFloat32, RedOp{});
    if (next.isOk()) return "a call after the mismatch succeeded";
    if (next.message().find("earlier call failed") == std::string::npos)
      return "the call after the mismatch: " + next.message();
    return "";
  });
  for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

// A Reduce's leaves only send: over shm they do not wait for the root's header, and a root that differs still
// fails on every rank, the leaves at their next call.
TEST_P(Mismatch, ReduceRootsDifferOnALeaf) {
  auto results = runProcesses(3, GetParam(), [](Communicator& comm) -> std::string {
    std::vector<float> data(64, 1.0f);
    // Every rank's init is over before one fails (a rank still setting up would fail its init with that cause).
    Status st = comm.allReduce(data.data(), data.data(), data.size(), DataType::kFloat32, RedOp{});
    if (!st.isOk()) return "the matching call before the mismatch: " + st.message();
    // Ranks 0 and 1 reduce to rank 0, rank 2 to itself: rank 1 is a leaf towards 0, rank 2 a root.
    const int root = comm.rank() == 2 ? 2 : 0;
    st = comm.reduce(data.data(), data.data(), data.size(), DataType::kFloat32, RedOp{}, root);
    for (int i = 0; st.isOk() && i < 2; ++i)
      st = comm.allReduce(data.data(), data.data(), data.size(), DataType::kFloat32, RedOp{});
    if (st.isOk()) return "every call after the mismatched Reduce succeeded";
    return "";
  });
  for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

// Long loops of calls whose bytes flow one way: the receivers confirm the senders' headers in batches (a run of
// Broadcasts from one root, longer than a sender may run ahead), and before they send themselves (Broadcasts and
// Reduces taking turns, their roots changing); every call's bytes are right.
TEST_P(Mismatch, LongLoopsOfOneWayCallsRunAndCheck) {
  auto results = runProcesses(3, GetParam(), [](Communicator& comm) -> std::string {
    std::vector<float> data(4);
    for (int i = 0; i < 200; ++i) {
      std::fill(data.begin(), data.end(), static_cast<float>(comm.rank() == 0 ? i : -1));
      Status st = comm.broadcast(data.data(), data.data(), data.size(), DataType::kFloat32, 0);
      if (!st.isOk()) return "Broadcast " + std::to_string(i) + " of the run: " + st.message();
      if (data[3] != static_cast<float>(i)) return "Broadcast " + std::to_string(i) + " of the run was wrong";
    }
    for (int i = 0; i < 200; ++i) {
      const int root = (i / 30) % 3;
      std::fill(data.begin(), data.end(), static_cast<float>(comm.rank() == root ? i : -1));
      Status st = comm.broadcast(data.data(), data.data(), data.size(), DataType::kFloat32, root);
      if (!st.isOk()) return "Broadcast " + std::to_string(i) + ": " + st.message();
      if (data[3] != static_cast<float>(i))
        return "Broadcast " + std::to_string(i) + " delivered " + std::to_string(data[3]);
      std::fill(data.begin(), data.end(), static_cast<float>(i + comm.rank()));
      st = comm.reduce(data.data(), data.data(), data.size(), DataType::kFloat32, RedOp{}, root);
      if (!st.isOk()) return "Reduce " + std::to_string(i) + ": " + st.message();
      if (comm.rank() == root && data[0] != static_cast<float>(3 * i + 3))
        return "Reduce " + std::to_string(i) + " gave " + std::to_string(data[0]);
    }
    std::fill(data.begin(), data.end(), 1.0f);
    Status st = comm.allReduce(data.data(), data.data(), data.size(), DataType::kFloat32, RedOp{});
    if (!st.isOk()) return "the AllReduce after the loop: " + st.message();
    return data[0] == 3.0f ? "" : "the AllReduce after the loop gave " + std::to_string(data[0]);
  });
  for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

// A receiver's call differs in the middle of a loop of Broadcasts, at a point where the receiver has confirmed
// none of the last few calls yet: it fails there, and the root, which ran ahead, fails by the end of the loop.
TEST_P(Mismatch, ABroadcastDiffersInALoop) {
  auto results = runProcesses(2, GetParam(), [](Communicator& comm) -> std::string {
    std::vector<float> data(4, 1.0f);
    Status st;
    int failedAt = -1;
    for (int i = 0; i < 100 && failedAt < 0; ++i) {
      const size_t count = comm.rank() == 1 && i == 37 ? 3 : 2;
      st = comm.broadcast(data.data(), data.data(), count, DataType::kFloat32, 0);
      if (!st.isOk()) failedAt = i;
    }
    if (failedAt < 0) st = comm.allReduce(data.data(), data.data(), 2, DataType::kFloat32, RedOp{});
    if (st.isOk()) return "every call succeeded";
    if (failedAt >= 0 && failedAt < 37) return "call " + std::to_string(failedAt) + " failed: " + st.message();
    if (comm.rank() == 1 && failedAt != 37) return "the receiver failed at call " + std::to_string(failedAt);
    if (st.message().find("mismatched calls") == std::string::npos) return "unexpected message: " + st.message();
    if (st.message().find("count 3") == std::string::npos) return "the differing call is not named: " + st.message();
    return "";
  });
  for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

TEST_P(Mismatch, CollectivesDiffer) {
  std::vector<float> data(256, 1.0f);
  expectBothFail(
      [&](Communicator& c, int rank) {
        if (rank == 0) return c.allReduce(data.data(), data.data(), data.size(), DataType::kFloat32, RedOp{});
        return c.allGather(data.data(), data.data(), 128, DataType::kFloat32);
      },
      "AllGather");
}

TEST_P(Mismatch, SendAndRecvSizesDiffer) {
  std::vector<float> data(1 << 16, 1.0f);
  expectBothFail(
      [&](Communicator& c, int rank) {
        if (rank == 0) return c.send(data.data(), 1000, DataType::kFloat32, 1);
        return c.recv(data.data(), 2000, DataType::kFloat32, 0);
      },
      "differ");
}

// Rank 1 arrives after rank 0's timeout: rank 0 fails with the timeout, rank 1 with an error (rank 0 closed its
// connections when it failed), and no later call on either returns success.
TEST_P(Mismatch, ALateRankGetsAnErrorNotWrongData) {
  setenv("CHORUS_TIMEOUT", "1", 1);
  auto results = runProcesses(2, GetParam(), [](Communicator& comm) -> std::string {
    std::vector<float> data(1 << 16, 1.0f);
    if (comm.rank() == 1) usleep(1600 * 1000);
    Status st = comm.allReduce(data.data(), data.data(), data.size(), DataType::kFloat32, RedOp{});
    if (st.isOk()) return "the call with a late peer succeeded";
    for (int i = 0; i < 3; ++i) {
      std::fill(data.begin(), data.end(), 1.0f);
      if (comm.allReduce(data.data(), data.data(), data.size(), DataType::kFloat32, RedOp{}).isOk())
        return "a later call succeeded (data " + std::to_string(data[0]) + ")";
    }
    return "";
  });
  unsetenv("CHORUS_TIMEOUT");
  for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

// Matching calls of every kind still run, and CHORUS_CHECK_CALLS=0 turns the check off.
TEST_P(Mismatch, MatchingCallsStillRun) {
  for (const char* check : {"1", "0"}) {
    setenv("CHORUS_CHECK_CALLS", check, 1);
    auto results = runProcesses(2, GetParam(), [](Communicator& comm) -> std::string {
      for (size_t count : {size_t{1}, size_t{2}, size_t{300}, size_t{1} << 20}) {
        std::vector<float> data(count, static_cast<float>(comm.rank() + 1));
        Status st = comm.allReduce(data.data(), data.data(), count, DataType::kFloat32, RedOp{});
        if (!st.isOk()) return st.message();
        if (data[count - 1] != 3.0f) return "wrong sum";
      }
      return "";
    });
    unsetenv("CHORUS_CHECK_CALLS");
    for (size_t r = 0; r < results.size(); ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << " check " << check;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, Mismatch, ::testing::ValuesIn(processTransports()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace chorus::testing

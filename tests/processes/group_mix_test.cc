// Groups that mix collectives and Send/Recv, where each rank's part of the group differs, and groups that bind many
// new shapes at once: the cases chorus_soak found wrong.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/process_ranks.hpp"

namespace chorus::testing {
namespace {

std::string check(Status st, const char* what) { return st.isOk() ? "" : std::string(what) + ": " + st.message(); }

// Only rank 0 sends to and receives from itself inside the group, so the ranks' groups hold different numbers of
// operations: a Broadcast alone on rank 1, a Broadcast and a Send/Recv pair on rank 0. Both must still agree on how
// the Broadcast's call headers travel, between plain Broadcasts whose headers rank 1 confirms in batches.
TEST(GroupMix, GroupsWhosePointToPointDiffersByRank) {
  for (const std::string& transport : processTransports()) {
    auto results = runProcesses(2, transport, [](Communicator& comm) -> std::string {
      const int rank = comm.rank();
      std::vector<float> data(4), mine(8, 0), self(8, 0);
      for (int i = 0; i < 60; ++i) {
        for (int b = 0; b < 3; ++b) {
          for (size_t k = 0; k < data.size(); ++k) data[k] = rank == 0 ? static_cast<float>(i * 10 + b + k) : -1;
          if (auto e = check(comm.broadcast(data.data(), data.data(), data.size(), DataType::kFloat32, 0), "bcast");
              !e.empty())
            return e;
          if (data[3] != static_cast<float>(i * 10 + b + 3)) return "a plain Broadcast gave a wrong value";
        }
        for (size_t k = 0; k < mine.size(); ++k) mine[k] = static_cast<float>(i + k);
        if (auto e = check(groupStart(), "groupStart"); !e.empty()) return e;
        Status st = comm.broadcast(data.data(), data.data(), data.size(), DataType::kFloat32, 0);
        if (rank == 0 && st.isOk()) st = comm.send(mine.data(), mine.size(), DataType::kFloat32, 0);
        if (rank == 0 && st.isOk()) st = comm.recv(self.data(), self.size(), DataType::kFloat32, 0);
        Status ended = groupEnd();
        if (auto e = check(st.isOk() ? ended : st, "the group"); !e.empty()) return e;
        if (rank == 0 && self[7] != static_cast<float>(i + 7)) return "the Send/Recv to itself gave a wrong value";
      }
      return "";
    });
    for (int r = 0; r < 2; ++r)
      EXPECT_EQ(results[r].exitCode, 0) << transport << " rank " << r << ": " << results[r].message;
  }
}

// The plan cache is bounded; emptying it while a group binds left the group's first operations pointing at freed
// plans. Groups of a few new shapes each, past the bound several times, every result checked.
TEST(GroupMix, GroupsOfNewShapesPastThePlanCacheBound) {
  auto results = runProcesses(3, "shm", [](Communicator& comm) -> std::string {
    size_t count = 1;
    for (int g = 0; g < 140; ++g) {
      const int ops = 3 + g % 5;
      std::vector<std::vector<int32_t>> data(ops);
      if (auto e = check(groupStart(), "groupStart"); !e.empty()) return e;
      Status st;
      for (int k = 0; k < ops && st.isOk(); ++k) {
        data[k].assign(count++, comm.rank() + 1);
        st = comm.allReduce(data[k].data(), data[k].data(), data[k].size(), DataType::kInt32, RedOp::sum());
      }
      Status ended = groupEnd();
      if (auto e = check(st.isOk() ? ended : st, "the group"); !e.empty()) return e;
      for (int k = 0; k < ops; ++k)
        for (int32_t v : data[k])
          if (v != 6) return "group " + std::to_string(g) + " gave " + std::to_string(v) + " where 6 was due";
    }
    return "";
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << ": " << results[r].message;
}

}  // namespace
}  // namespace chorus::testing

// The cores a machine's ranks share: each rank's CPU set in list form, read back strictly, and the union of the sets
// of the ranks on one machine against their number.
#include "transports/machine_load.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <thread>

#include "core/cpu_set.hpp"

namespace chorus::transport {
namespace {

TEST(CpuList, WritesRunsAsRanges) {
  EXPECT_EQ(formatCpuList({0}), "0");
  EXPECT_EQ(formatCpuList({0, 1}), "0,1");
  EXPECT_EQ(formatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10,11");
  EXPECT_EQ(formatCpuList({4, 5, 6, 63, 64, 65, 66}), "4-6,63-66");
}

TEST(CpuList, ReadsBackWhatItWrites) {
  for (const std::vector<int>& cpus :
       std::vector<std::vector<int>>{{0}, {7}, {0, 1}, {0, 1, 2, 3, 8, 10, 11}, {1, 3, 5, 200, 201, 202, 1023}}) {
    std::vector<int> back;
    ASSERT_TRUE(parseCpuList(formatCpuList(cpus), &back)) << formatCpuList(cpus);
    EXPECT_EQ(back, cpus);
  }
}

TEST(CpuList, RejectsAnythingElse) {
  for (const char* bad : {"", ",", "0,", ",0", "a", "0-", "-1", "3-1", "1,1", "2,1", "0-3,2", "1 2", "0x1", "+1",
                          "0--2", "99999999999", "1048576"}) {
    std::vector<int> out = {42};
    EXPECT_FALSE(parseCpuList(bad, &out)) << "'" << bad << "'";
    EXPECT_EQ(out, std::vector<int>{42}) << "left as it was";
  }
}

// The set follows the thread's affinity: a launcher's binding or taskset.
TEST(CpuList, AllowedCpusFollowTheAffinity) {
  const std::vector<int> all = allowedCpus();
  ASSERT_FALSE(all.empty());
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  std::thread([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(all.back(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    EXPECT_EQ(allowedCpus(), std::vector<int>{all.back()});
  }).join();
  EXPECT_EQ(allowedCpus(), all) << "another thread's binding is its own";
}

PeerInfo peer(int rank, const std::string& machine, std::vector<int> cpus) {
  PeerInfo p;
  p.rank = rank;
  p.hostId = p.machineId = machine;
  p.cpus = std::move(cpus);
  return p;
}

TEST(MachineLoad, CountsTheCoresTheMachinesRanksMayRunOn) {
  // Unbound ranks on a 2-core machine: each may run anywhere.
  std::vector<PeerInfo> peers = {peer(0, "a", {0, 1}), peer(1, "a", {0, 1}), peer(2, "a", {0, 1})};
  EXPECT_EQ(machineLoad(peers, 1).ranks, 3);
  EXPECT_EQ(machineLoad(peers, 1).cores, 2);
  EXPECT_TRUE(machineLoad(peers, 1).ranksShareCores());
  // Bound one to a core of a 64-core machine: each sees one CPU, together they have four.
  peers = {peer(0, "a", {0}), peer(1, "a", {1}), peer(2, "a", {2}), peer(3, "a", {3})};
  EXPECT_EQ(machineLoad(peers, 0).cores, 4);
  EXPECT_FALSE(machineLoad(peers, 0).ranksShareCores());
  // Confined together to one core of a larger machine (taskset, a container's cpuset).
  peers = {peer(0, "a", {5}), peer(1, "a", {5})};
  EXPECT_EQ(machineLoad(peers, 0).cores, 1);
  EXPECT_TRUE(machineLoad(peers, 0).ranksShareCores());
  EXPECT_TRUE(anyMachineSharesCores(peers));
}

TEST(MachineLoad, OtherMachinesRanksDoNotCount) {
  const std::vector<PeerInfo> peers = {peer(0, "a", {0}), peer(1, "b", {0}), peer(2, "b", {0}), peer(3, "a", {1})};
  EXPECT_EQ(machineLoad(peers, 0).ranks, 2);
  EXPECT_EQ(machineLoad(peers, 0).cores, 2);
  EXPECT_FALSE(machineLoad(peers, 3).ranksShareCores());
  EXPECT_EQ(machineLoad(peers, 1).ranks, 2);
  EXPECT_TRUE(machineLoad(peers, 1).ranksShareCores()) << "b's two ranks on one core";
  EXPECT_TRUE(anyMachineSharesCores(peers));
  EXPECT_FALSE(anyMachineSharesCores({peer(0, "a", {0}), peer(1, "b", {0})}));
}

}  // namespace
}  // namespace chorus::transport

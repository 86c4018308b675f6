// Tier 2: ranks as processes over shm and tcp. A cross-section of cases that still touches every collective,
// datatype, op and world size; failure injection (a killed rank, garbage on the bootstrap port).
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>

#include "bootstrap/id_layout.hpp"
#include "bootstrap/socket.hpp"
#include "bootstrap/store.hpp"
#include "core/shareable_memory.hpp"
#include "tests/support/collective_case.hpp"
#include "tests/support/process_ranks.hpp"

namespace chorus::testing {
namespace {

// Cases for world size w: for each collective two (type, op, size, placement) picks that rotate with the
// collective and w, so that over all world sizes every type and op appears.
std::vector<Case> crossSection(int w) {
  const std::vector<size_t> sizes = {0, 1, 33, 1021, 70001};
  std::vector<Case> cases;
  int ci = 0;
  for (algo::CollType coll : testedCollectives()) {
    for (int k = 0; k < 2; ++k, ++ci) {
      const int pick = ci + k + w;
      Case c;
      c.coll = coll;
      c.type = allDataTypes()[(2 * ci + k + w) % allDataTypes().size()];
      c.op = allOps()[pick % allOps().size()];
      c.count = sizes[pick % sizes.size()];
      c.inPlace = supportsInPlace(coll) && pick % 2 == 1;
      c.root = pick % w;
      cases.push_back(c);
    }
  }
  return cases;
}

class ProcessCollectives : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ProcessCollectives, CrossSection) {
  const auto [transport, w] = GetParam();
  auto results = runProcesses(w, transport, [w = w](Communicator& comm) -> std::string {
    for (const Case& c : crossSection(w)) {
      std::string error = runCase(comm, c);
      if (!error.empty()) return error;
    }
    return "";
  });
  for (int r = 0; r < w; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Transports, ProcessCollectives,
                         ::testing::Combine(::testing::ValuesIn(processTransports()),
                                            ::testing::Values(1, 2, 3, 4, 7, 8)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
                         });

std::vector<std::string> shmEntriesOf(pid_t pid) {
  std::vector<std::string> found;
  const std::string prefix = "chorus-" + std::to_string(pid) + "-";
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) found.push_back(e->d_name);
    closedir(d);
  }
  return found;
}

// Runs the cross-section on `transport` for each world size in `worlds`.
void expectCrossSectionPasses(const std::string& transport, std::initializer_list<int> worlds) {
  for (int w : worlds) {
    auto results = runProcesses(w, transport, [w](Communicator& comm) -> std::string {
      for (const Case& c : crossSection(w)) {
        std::string error = runCase(comm, c);
        if (!error.empty()) return error;
      }
      return "";
    });
    for (int r = 0; r < w; ++r) EXPECT_EQ(results[r].exitCode, 0) << transport << ", " << w << " ranks, rank " << r;
  }
}

// Single-copy transfers between processes (process_vm_readv) from 4 KiB on, across the cross-section.
TEST(ProcessCollectivesDirect, CrossMemoryAttachGivesTheSameResults) {
  setenv("CHORUS_SHM_CMA", "1", 1);
  setenv("CHORUS_DIRECT_THRESHOLD", "4096", 1);
  expectCrossSectionPasses("shm", {2, 3, 4});
  unsetenv("CHORUS_SHM_CMA");
  unsetenv("CHORUS_DIRECT_THRESHOLD");
}

// The case's buffers in shareable blocks (what ncclMemAlloc returns on host memory), copied back after the call.
class ShareableHome final : public BufferHome {
 public:
  ~ShareableHome() override {
    for (auto& [host, block] : blocks_) freeShareable(block);
  }
  void* address(std::vector<unsigned char>& buffer, unsigned char* p) override {
    auto it = blocks_.find(&buffer);
    if (it == blocks_.end()) {
      void* block = nullptr;
      if (!allocateShareable(buffer.size(), &block).isOk()) ADD_FAILURE() << "allocateShareable failed";
      memcpy(block, buffer.data(), buffer.size());
      it = blocks_.emplace(&buffer, block).first;
    }
    return static_cast<unsigned char*>(it->second) + (p - buffer.data());
  }
  std::string finish() override {
    for (auto& [host, block] : blocks_) memcpy(host->data(), block, host->size());
    return "";
  }

 private:
  std::map<std::vector<unsigned char>*, void*> blocks_;
};

// Lines of this process's memory map that are a peer's shareable block, mapped read-only to read it in place.
int peerBlocksMapped() {
  std::ifstream maps("/proc/self/maps");
  int found = 0;
  for (std::string line; std::getline(maps, line);)
    found += line.find(" r--s ") != std::string::npos && line.find(kShareableName) != std::string::npos;
  return found;
}

// Buffers from ncclMemAlloc's shareable blocks are read in place by the peers (no FIFO, no cross-memory attach),
// from 4 KiB on, across the cross-section; each case allocates and frees its blocks, so descriptor numbers come
// back with new blocks and the peers must drop the old mappings. Rank 0 keeps plain buffers, whose steps go
// through the stream after all: both kinds mix in one call.
TEST(ProcessCollectivesDirect, ShareableBuffersAreReadInPlace) {
  setenv("CHORUS_DIRECT_THRESHOLD", "4096", 1);
  for (int w : {2, 3, 4}) {
    auto results = runProcesses(w, "shm", [w](Communicator& comm) -> std::string {
      for (const Case& c : crossSection(w)) {
        ShareableHome home;
        std::string error = runCase(comm, c, comm.rank() == 0 ? nullptr : &home);
        if (!error.empty()) return error;
      }
      // Every peer of rank 0 sends from shareable blocks: rank 0 must have read some in place.
      if (comm.rank() == 0 && peerBlocksMapped() == 0)
        return "no peer's shareable block was mapped: nothing was read in place";
      return "";
    });
    for (int r = 0; r < w; ++r) EXPECT_EQ(results[r].exitCode, 0) << w << " ranks, rank " << r;
  }
  unsetenv("CHORUS_DIRECT_THRESHOLD");
}

// Steps from 2 MiB (engine::kStreamingThreshold) read in place from a peer's shareable block: copies store past the
// caches, and reductions out of place sum through the bounce buffer in 256 KiB pieces and stream the sums out. Steps
// of 8 MiB and 12 bytes leave a tail in every piece's last cache line.
TEST(ProcessCollectivesDirect, LargeStepsReadInPlaceStayExact) {
  auto results = runProcesses(2, "shm", [](Communicator& comm) -> std::string {
    const size_t step = (size_t{8} << 20) + 12;
    for (algo::CollType coll : {algo::CollType::kAllReduce, algo::CollType::kReduceScatter}) {
      for (bool inPlace : {false, true}) {
        ShareableHome home;
        Case c;
        c.coll = coll;
        c.type = DataType::kInt32;
        c.op = RedOp::sum();
        c.inPlace = inPlace;
        c.count = (coll == algo::CollType::kAllReduce ? 2 * step : step) / sizeof(int32_t);
        std::string error = runCase(comm, c, &home);
        if (!error.empty()) return error;
      }
    }
    return peerBlocksMapped() == 0 ? "no peer's shareable block was mapped: nothing was read in place" : "";
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
}

// Staged transfers between processes (direct AllGather, direct AllReduce's all-gather): a rank copies the bytes of a
// plain buffer once into shareable memory and the peers read them there in place, from kStagedDirectFrom per step
// (under the 256 KiB other steps need), through the FIFOs below; in and out of place, at sizes around the threshold.
TEST(ProcessCollectivesDirect, StagedTransfersAreReadInPlace) {
  for (const char* algorithm : {"allgather:direct", "allreduce:direct"}) {
    setenv("CHORUS_ALGO", algorithm, 1);
    for (int w : {3, 4}) {
      auto results = runProcesses(w, "shm", [w](Communicator& comm) -> std::string {
        const size_t threshold = algo::kStagedDirectFrom / 4;  // int32 elements in a step at the threshold
        for (size_t perStep : {size_t{0}, size_t{1}, size_t{1021}, threshold + 3, size_t{40001}}) {
          for (bool inPlace : {false, true}) {
            Case c;
            c.coll = std::string(getenv("CHORUS_ALGO")).starts_with("allgather") ? algo::CollType::kAllGather
                                                                                 : algo::CollType::kAllReduce;
            c.type = DataType::kInt32;
            c.op = RedOp::sum();
            c.inPlace = inPlace;
            c.count = c.coll == algo::CollType::kAllGather ? perStep : perStep * static_cast<size_t>(w);
            std::string error = runCase(comm, c);
            if (!error.empty()) return error;
          }
        }
        return peerBlocksMapped() == 0 ? "no peer's staged bytes were mapped: nothing was read in place" : "";
      });
      for (int r = 0; r < w; ++r) EXPECT_EQ(results[r].exitCode, 0) << algorithm << ", " << w << " ranks, rank " << r;
    }
  }
  unsetenv("CHORUS_ALGO");
}

// Direct transfers over tcp (the bytes on a socket of their own, straight from the sender's buffer) from 4 KiB on.
TEST(ProcessCollectivesDirect, TcpDirectTransfersGiveTheSameResults) {
  setenv("CHORUS_DIRECT_THRESHOLD", "4096", 1);
  expectCrossSectionPasses("tcp", {2, 3});
  unsetenv("CHORUS_DIRECT_THRESHOLD");
}

TEST(TcpCongestionControl, LocalPathsAreRecognisedAndUnknownAlgorithmsNamed) {
  int listenFd = -1, dialed = -1, accepted = -1;
  net::Endpoint bound;
  ASSERT_TRUE(net::listenOn(net::localAddress(), 0, &listenFd, &bound).isOk());
  ASSERT_TRUE(net::connectTo(bound, Deadline::after(5), &dialed).isOk());
  ASSERT_TRUE(net::acceptOne(listenFd, Deadline::after(5), &accepted).isOk());
  EXPECT_TRUE(net::isLocalPath(dialed));
  EXPECT_TRUE(net::isLocalPath(accepted));
  ASSERT_TRUE(net::setCongestionControl(dialed, "reno").isOk());
  char name[16] = {};
  socklen_t len = sizeof(name);
  ASSERT_EQ(getsockopt(dialed, IPPROTO_TCP, TCP_CONGESTION, name, &len), 0);
  EXPECT_STREQ(name, "reno");
  Status st = net::setCongestionControl(dialed, "no-such-cc");
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("no-such-cc"), std::string::npos) << st.message();
  for (int* fd : {&listenFd, &dialed, &accepted}) net::closeFd(*fd);
}

// An algorithm the kernel does not have fails the tcp setup on every rank, promptly, instead of running without it.
TEST(TcpCongestionControl, AnUnknownAlgorithmFailsInit) {
  setenv("CHORUS_TCP_CONGESTION", "no-such-cc", 1);
  setenv("CHORUS_TIMEOUT", "20", 1);
  auto results = runProcesses(
      2, "tcp", [](Communicator&) -> std::string { return ""; }, 60);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].exitCode, 1) << "rank " << r;
    EXPECT_LT(results[r].secondsToExit, 30) << "rank " << r;
  }
  unsetenv("CHORUS_TCP_CONGESTION");
  unsetenv("CHORUS_TIMEOUT");
}

class KilledRank : public ::testing::TestWithParam<std::string> {};

// SIGKILL one rank in the middle of a stream of large AllReduces: every other rank must return an error that
// names the operation within 10 s, and no shared-memory segment may stay behind.
TEST_P(KilledRank, SurvivorsReportAnErrorQuickly) {
  const int n = 4, victim = 2;
  auto results = runProcesses(
      n, GetParam(),
      [](Communicator& comm) -> std::string {
        std::vector<float> buf(4 << 20, 1.0f);
        for (int it = 0; it < 100000; ++it) {
          if (comm.rank() == victim && it == 3) kill(getpid(), SIGKILL);
          Status st = comm.allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32, RedOp::sum());
          if (!st.isOk()) {
            if (st.message().find("AllReduce") == std::string::npos)
              return "error does not name the op: " + st.message();
            return "";
          }
        }
        return "no error although a rank was killed";
      },
      60);
  ASSERT_EQ(results[victim].exitCode, 128 + SIGKILL);
  for (int r = 0; r < n; ++r) {
    if (r == victim) continue;
    EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
    EXPECT_LT(results[r].secondsToExit - results[victim].secondsToExit, 10.0) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, KilledRank, ::testing::ValuesIn(processTransports()));

TEST(SharedMemory, NoSegmentOutlivesInit) {
  auto results = runProcesses(3, "shm", [](Communicator& comm) -> std::string {
    // After init every segment is mapped and unlinked: nothing with this process's pid may remain.
    auto left = shmEntriesOf(getpid());
    int count = static_cast<int>(left.size()), total = 0;
    Status st = comm.allReduce(&count, &total, 1, DataType::kInt32, RedOp::sum());
    if (!st.isOk()) return st.message();
    return total == 0 ? "" : std::to_string(total) + " /dev/shm entries left after init";
  });
  for (auto& r : results) EXPECT_EQ(r.exitCode, 0);
}

// Connections that send garbage, a wrong secret or an absurd length to `id`'s root are closed by it.
void expectGarbageRefused(const UniqueId& id) {
  bootstrap::IdLayout l = bootstrap::decodeId(id);
  net::Endpoint root{l.rootIp, l.rootPort};
  auto sendAndExpectClose = [&](const void* data, size_t bytes) {
    int fd = -1;
    ASSERT_TRUE(net::connectTo(root, Deadline::after(5), &fd).isOk());
    ASSERT_TRUE(net::sendAll(fd, data, bytes, Deadline::after(5)).isOk());
    char c;
    Status st = net::recvAll(fd, &c, 1, Deadline::after(5));
    EXPECT_EQ(st.code(), ErrorCode::kRemoteError) << st.message();  // the root closed the connection
    net::closeFd(fd);
  };
  std::vector<unsigned char> garbage(4096);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<unsigned char>(i * 131 + 7);
  sendAndExpectClose(garbage.data(), garbage.size());
  uint64_t wrongSecret[2] = {bootstrap::wire::kHelloMagic, l.secret + 1};
  sendAndExpectClose(wrongSecret, sizeof(wrongSecret));
  // A valid hello followed by an absurd length is dropped too.
  struct {
    bootstrap::wire::Hello hello;
    bootstrap::wire::RequestHeader request;
  } oversized{{bootstrap::wire::kHelloMagic, l.secret}, {bootstrap::wire::kSet, 10, 1ull << 40, 1}};
  sendAndExpectClose(&oversized, sizeof(oversized));
}

TEST(Bootstrap, GarbageAndWrongSecretsAreRefusedAndTheRootKeepsServing) {
  auto idAfterGarbage = [](UniqueId* id) -> Status {
    CHORUS_TRY(UniqueId::create(id));
    expectGarbageRefused(*id);
    return Status::ok();
  };
  // The same root still brings up a communicator.
  auto results = runProcesses(
      2, "",
      [](Communicator& comm) -> std::string {
        int v = 1, sum = 0;
        Status st = comm.allReduce(&v, &sum, 1, DataType::kInt32, RedOp::sum());
        return st.isOk() && sum == 2 ? "" : "allreduce after garbage failed";
      },
      60, idAfterGarbage);
  for (auto& r : results) EXPECT_EQ(r.exitCode, 0);
}

}  // namespace
}  // namespace chorus::testing

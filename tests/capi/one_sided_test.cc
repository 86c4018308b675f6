// NCCL 2.29's host one-sided operations through the C API: puts into the peers' windows land in order before their
// signal, large puts from every rank to every rank at once finish, signals count per index and context, invalid
// calls and puts outside a window are errors that name the cause, and a rank whose peer died gets an error naming
// it, not a hang. The puts run between processes (shared memory; ctest runs the suite again over tcp), the signal
// and argument checks between threads of one process.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"

namespace {

// Waits end after 20 s; set before main, so before chorus reads its settings.
const bool kTimeoutSet = [] { return setenv("CHORUS_TIMEOUT", "20", 1) == 0; }();

void onThreads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&body, r] { body(r); });
  for (auto& t : threads) t.join();
}

ncclResult_t initOneSided(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank, int contexts = 1) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.numRmaCtx = contexts;
  return ncclCommInitRankConfig(comm, nranks, id, rank, &config);
}

// `n` ranks as processes (so that they meet over shared memory, or tcp where forced) with one-sided channels,
// each with a window of `windowBytes`: body(rank, comm, window, base) in each; a rank's failed check is its exit code.
void withWindows(int n, size_t windowBytes, const std::function<void(int, ncclComm_t, ncclWindow_t, char*)>& body) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid > 0) {
      pids.push_back(pid);
      continue;
    }
    std::vector<char> memory(windowBytes);
    ncclComm_t comm = nullptr;
    ncclWindow_t win = nullptr;
    [&] {
      ASSERT_EQ(initOneSided(&comm, n, id, r), ncclSuccess);
      ASSERT_EQ(ncclCommWindowRegister(comm, memory.data(), windowBytes, &win, NCCL_WIN_DEFAULT), ncclSuccess);
      body(r, comm, win, memory.data());
      EXPECT_EQ(ncclCommWindowDeregister(comm, win), ncclSuccess);
      EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
    }();
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  for (int r = 0; r < n; ++r) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[r], &status, 0), pids[r]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r << " exit status " << status;
  }
}

TEST(OneSided, PutsLandInOrderBeforeTheirSignal) {
  constexpr int kRanks = 4, kPuts = 64;
  constexpr size_t kChunk = 48 << 10;  // 64 puts of 48 KiB: 3 MiB per peer, past a FIFO's worth in flight
  withWindows(kRanks, kPuts * kChunk, [&](int r, ncclComm_t comm, ncclWindow_t win, char* base) {
    const int right = (r + 1) % kRanks, left = (r + kRanks - 1) % kRanks;
    std::vector<int> chunk(kChunk / sizeof(int));
    for (int i = 0; i < kPuts; ++i) {
      for (size_t k = 0; k < chunk.size(); ++k) chunk[k] = r * 1000000 + i * 1000 + static_cast<int>(k % 1000);
      ASSERT_EQ(ncclPutSignal(chunk.data(), chunk.size(), ncclInt32, right, win, i * kChunk, 0, 0, 0, comm, nullptr),
                ncclSuccess);
    }
    // One signal at a time: when the i-th arrived, puts 0..i are all there, whole.
    for (int i = 0; i < kPuts; ++i) {
      ncclWaitSignalDesc_t desc = {1, left, 0, 0};
      ASSERT_EQ(ncclWaitSignal(1, &desc, comm, nullptr), ncclSuccess);
      for (int j = 0; j <= i; ++j) {
        const int* got = reinterpret_cast<const int*>(base + j * kChunk);
        for (size_t k = 0; k < kChunk / sizeof(int); k += 997)
          ASSERT_EQ(got[k], left * 1000000 + j * 1000 + static_cast<int>(k % 1000)) << "put " << j << " at " << k;
      }
    }
  });
}

TEST(OneSided, LargePutsFromEveryRankToEveryRankAtOnce) {
  constexpr int kRanks = 3;
  constexpr size_t kBytes = 16 << 20;  // each rank's block of the others' windows, far past the FIFOs
  withWindows(kRanks, kRanks * kBytes, [&](int r, ncclComm_t comm, ncclWindow_t win, char* base) {
    std::vector<char> mine(kBytes);
    for (size_t i = 0; i < kBytes; ++i) mine[i] = static_cast<char>(r * 31 + i % 251);
    std::vector<ncclWaitSignalDesc_t> descs;
    for (int p = 0; p < kRanks; ++p) {  // itself too: a copy
      ASSERT_EQ(ncclPutSignal(mine.data(), kBytes, ncclInt8, p, win, r * kBytes, 0, 0, 0, comm, nullptr), ncclSuccess);
      descs.push_back({1, p, 0, 0});
    }
    ASSERT_EQ(ncclWaitSignal(kRanks, descs.data(), comm, nullptr), ncclSuccess);
    for (int p = 0; p < kRanks; ++p)
      for (size_t i = 0; i < kBytes; i += 4093) ASSERT_EQ(base[p * kBytes + i], static_cast<char>(p * 31 + i % 251));
  });
}

TEST(OneSided, SignalsCountPerIndexAndContext) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  onThreads(2, [&](int r) {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(initOneSided(&comm, 2, id, r, 2), ncclSuccess);
    if (r == 0) {
      for (int i = 0; i < 3; ++i) ASSERT_EQ(ncclSignal(1, 5, 1, 0, comm, nullptr), ncclSuccess);
      ASSERT_EQ(ncclSignal(1, 0, 0, 0, comm, nullptr), ncclSuccess);
    } else {
      // Two descriptors of one signal add up; the signal of another index or context does not count for it.
      ncclWaitSignalDesc_t descs[] = {{2, 0, 5, 1}, {1, 0, 5, 1}, {1, 0, 0, 0}};
      ASSERT_EQ(ncclWaitSignal(3, descs, comm, nullptr), ncclSuccess);
      ASSERT_EQ(ncclSignal(1, 7, 0, 0, comm, nullptr), ncclSuccess);  // to itself
      ncclWaitSignalDesc_t self = {1, 1, 7, 0};
      ASSERT_EQ(ncclWaitSignal(1, &self, comm, nullptr), ncclSuccess);
    }
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  });
}

TEST(OneSided, InvalidCallsNameTheirCause) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::vector<char>> windows(2, std::vector<char>(4096));
  onThreads(2, [&](int r) {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(initOneSided(&comm, 2, id, r), ncclSuccess);
    ncclWindow_t win = nullptr;
    ASSERT_EQ(ncclCommWindowRegister(comm, windows[r].data(), 4096, &win, NCCL_WIN_DEFAULT), ncclSuccess);
    float v[4] = {1, 2, 3, 4};
    if (r == 0) {
      EXPECT_EQ(ncclPutSignal(v, 4, ncclFloat32, 2, win, 0, 0, 0, 0, comm, nullptr), ncclInvalidArgument);
      EXPECT_NE(std::string(ncclGetLastError(comm)).find("peer 2"), std::string::npos);
      EXPECT_EQ(ncclPutSignal(v, 4, ncclFloat32, 1, win, 0, 0, 1, 0, comm, nullptr), ncclInvalidArgument);  // ctx
      EXPECT_NE(std::string(ncclGetLastError(comm)).find("numRmaCtx"), std::string::npos);
      EXPECT_EQ(ncclPutSignal(v, 4, ncclFloat32, 1, win, 0, 0, 0, 1, comm, nullptr), ncclInvalidArgument);  // flags
      EXPECT_EQ(ncclPutSignal(v, 4, ncclFloat32, 1, win, 0, -1, 0, 0, comm, nullptr), ncclInvalidArgument);
      int notAWindow = 0;
      EXPECT_EQ(
          ncclPutSignal(v, 4, ncclFloat32, 1, reinterpret_cast<ncclWindow_t>(&notAWindow), 0, 0, 0, 0, comm, nullptr),
          ncclInvalidArgument);
      EXPECT_EQ(ncclWaitSignal(-1, nullptr, comm, nullptr), ncclInvalidArgument);
      // Past the end of rank 1's window: the put leaves, the target drops it and its wait says why.
      EXPECT_EQ(ncclPutSignal(v, 4, ncclFloat32, 1, win, 4090, 0, 0, 0, comm, nullptr), ncclSuccess);
    } else {
      ncclWaitSignalDesc_t desc = {1, 0, 0, 0};
      EXPECT_EQ(ncclWaitSignal(1, &desc, comm, nullptr), ncclInvalidArgument);
      const std::string error = ncclGetLastError(comm);
      EXPECT_NE(error.find("rank 0"), std::string::npos) << error;
      EXPECT_NE(error.find("offset 4090"), std::string::npos) << error;
    }
    EXPECT_EQ(ncclCommWindowDeregister(comm, win), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  });
}

TEST(OneSided, ACommunicatorWithoutTheChannelRefusesThem) {
  ncclComm_t comm = nullptr;
  int device = 0;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, &device), ncclSuccess);
  ncclWaitSignalDesc_t desc = {1, 0, 0, 0};
  EXPECT_EQ(ncclSignal(0, 0, 0, 0, comm, nullptr), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(comm)).find("numRmaCtx"), std::string::npos);
  EXPECT_EQ(ncclWaitSignal(1, &desc, comm, nullptr), ncclInvalidUsage);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.numRmaCtx = -1;
  ncclComm_t refused = nullptr;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  EXPECT_EQ(ncclCommInitRankConfig(&refused, 1, id, 0, &config), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(OneSided, AWaitForADeadPeerEndsWithAnErrorNamingIt) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 2; ++rank) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid > 0) {
      pids.push_back(pid);
      continue;
    }
    ncclComm_t comm = nullptr;
    if (initOneSided(&comm, 2, id, rank) != ncclSuccess) _exit(10);
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      raise(SIGKILL);  // dies without a word, its signal never sent
    }
    const auto start = std::chrono::steady_clock::now();
    ncclWaitSignalDesc_t desc = {1, 1, 0, 0};
    const ncclResult_t r = ncclWaitSignal(1, &desc, comm, nullptr);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string error = ncclGetLastError(comm);
    fprintf(stderr, "wait on the dead rank: %d after %.1f s: %s\n", r, seconds, error.c_str());
    // Before the 20 s timeout: the channel sees the peer go.
    _exit(r == ncclRemoteError && error.find("rank 1") != std::string::npos && seconds < 15 ? 0 : 11);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pids[0], &status, 0), pids[0]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank 0 exit status " << status;
  waitpid(pids[1], &status, 0);
}

}  // namespace

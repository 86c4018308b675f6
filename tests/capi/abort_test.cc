// ncclCommAbort from another thread while a call waits (PyTorch's watchdog), ncclCommGetAsyncError after a peer
// failure, and NCCL's nonblocking mode (config.blocking = 0), all through the C API.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "nccl.h"

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Polls ncclCommGetAsyncError until it leaves ncclInProgress (or 30 s pass).
ncclResult_t waitAsync(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  const auto start = Clock::now();
  while (msSince(start) < 30000) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
    if (state != ncclInProgress) return state;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return ncclInProgress;
}

int iterations() {
  const char* v = getenv("CHORUS_ABORT_ITERATIONS");
  return v ? atoi(v) : 200;
}

// Rank 1 never calls: rank 0's AllReduce waits until another thread aborts rank 0's communicator at a random
// moment (before the call, during it). The call must end with an error, the handle must stay safe to use (an
// error), and nothing may crash or leak into the next round.
TEST(CapiAbort, WatchdogAbortsAWaitingCall) {
  std::mt19937 random(12345);
  std::vector<double> latencies;
  std::vector<float> data(1024, 1.0f);
  int interrupted = 0;
  for (int i = 0, n = iterations(); i < n; ++i) {
    ncclComm_t comms[2];
    ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
    std::atomic<bool> started{false};
    ncclResult_t callResult = ncclSuccess;
    Clock::time_point returned;
    std::thread caller([&] {
      started = true;
      callResult = ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comms[0], nullptr);
      returned = Clock::now();
    });
    while (!started) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 3000));
    const auto abortStart = Clock::now();
    ASSERT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
    const double abortMs = msSince(abortStart);
    caller.join();
    // A call the abort interrupted returns ncclRemoteError; one that came to the gate after the abort closed it,
    // ncclInvalidArgument (the handle is dead).
    EXPECT_TRUE(callResult == ncclRemoteError || callResult == ncclInvalidArgument)
        << "round " << i << ": " << ncclGetErrorString(callResult);
    interrupted += callResult == ncclRemoteError;
    latencies.push_back(std::max(0.0, std::chrono::duration<double, std::milli>(returned - abortStart).count()));
    EXPECT_LT(abortMs, 1000) << "ncclCommAbort took " << abortMs << " ms";
    // The handle is dead, not freed: calls on it are errors.
    EXPECT_EQ(ncclAllReduce(data.data(), data.data(), 1, ncclFloat32, ncclSum, comms[0], nullptr), ncclInvalidArgument);
    ncclResult_t state;
    EXPECT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclInvalidArgument);
    EXPECT_EQ(ncclCommDestroy(comms[0]), ncclInvalidArgument);
    EXPECT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
  }
  std::sort(latencies.begin(), latencies.end());
  printf("abort -> waiting call returned: median %.3f ms, max %.3f ms over %zu rounds\n",
         latencies[latencies.size() / 2], latencies.back(), latencies.size());
  EXPECT_LT(latencies.back(), 1000);
  EXPECT_GT(interrupted, 0) << "no round aborted a call that was waiting";
}

// A peer that goes away fails the waiting call with ncclRemoteError, and ncclCommGetAsyncError reports it from then
// on (from any thread).
TEST(CapiAbort, AsyncErrorReportsAPeerFailure) {
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  ncclResult_t state = ncclInternalError;
  ASSERT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclSuccess);
  std::vector<float> data(1 << 16, 1.0f);
  std::thread peer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ncclCommAbort(comms[1]);  // rank 1 fails without joining the call
  });
  EXPECT_EQ(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, ncclSum, comms[0], nullptr),
            ncclRemoteError);
  peer.join();
  ASSERT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclRemoteError);
  EXPECT_NE(std::string(ncclGetLastError(comms[0])).find("rank 1"), std::string::npos) << ncclGetLastError(comms[0]);
  EXPECT_EQ(ncclCommDestroy(comms[0]), ncclSuccess);
}

ncclConfig_t nonblockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Init and collectives return ncclInProgress at once, even while the peer has not arrived, and complete on the
// communicator's thread; ncclCommGetAsyncError turns ncclSuccess when done.
TEST(CapiNonblocking, InitAndCollectivesReturnInProgress) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comms[2] = {nullptr, nullptr};
  std::vector<float> buffers[2] = {std::vector<float>(1000, 1.0f), std::vector<float>(1000, 2.0f)};
  ncclConfig_t config = nonblockingConfig();

  // Rank 0 alone: nothing it does may wait for rank 1.
  auto start = Clock::now();
  ASSERT_EQ(ncclCommInitRankConfig(&comms[0], 2, id, 0, &config), ncclInProgress);
  ASSERT_NE(comms[0], nullptr);
  ncclResult_t state;
  ASSERT_EQ(ncclCommGetAsyncError(comms[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);
  EXPECT_EQ(ncclAllReduce(buffers[0].data(), buffers[0].data(), 1000, ncclFloat32, ncclSum, comms[0], nullptr),
            ncclInProgress);
  EXPECT_LT(msSince(start), 500);
  // Arguments are still checked at once.
  EXPECT_EQ(ncclAllReduce(buffers[0].data(), buffers[0].data(), 1000, ncclFloat32, ncclSum, comms[0], nullptr) ==
                    ncclInProgress &&
                ncclAllReduce(nullptr, buffers[0].data(), 1000, ncclFloat32, ncclSum, comms[0], nullptr) ==
                    ncclInvalidArgument,
            true);

  std::thread rank1([&] {
    ASSERT_EQ(ncclCommInitRankConfig(&comms[1], 2, id, 1, &config), ncclInProgress);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(ncclAllReduce(buffers[1].data(), buffers[1].data(), 1000, ncclFloat32, ncclSum, comms[1], nullptr),
                ncclInProgress);
    }
    EXPECT_EQ(waitAsync(comms[1]), ncclSuccess);
  });
  EXPECT_EQ(waitAsync(comms[0]), ncclSuccess);
  rank1.join();
  // Two sums: (1 + 2) + (3 + 3) on both ranks.
  for (int r = 0; r < 2; ++r)
    for (float v : buffers[r]) ASSERT_EQ(v, 6.0f);
  for (ncclComm_t c : comms) {
    EXPECT_EQ(ncclCommFinalize(c), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  }
}

// An abort ends a nonblocking init that waits for a rank that never comes, within a bounded time.
TEST(CapiNonblocking, AbortEndsAWaitingInit) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = nonblockingConfig();
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 2, id, 0, &config), ncclInProgress);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ncclResult_t state;
  ASSERT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);
  const auto start = Clock::now();
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  const double ms = msSince(start);
  printf("abort of a waiting init: %.3f ms\n", ms);
  EXPECT_LT(ms, 1000);
}

}  // namespace

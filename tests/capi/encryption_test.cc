// ncclSetEncryption (NCCL 2.32) through the C API: ranks as processes that set the same key run collectives over
// the tcp transport (ctest forces it) with results exact; a rank holding another key fails its init with an error
// naming the TLS handshake, in seconds, not at the timeout; invalid configs are ncclInvalidArgument.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "nccl.h"

namespace {

const bool kTimeoutSet = [] { return setenv("CHORUS_TIMEOUT", "20", 1) == 0; }();

const char* const kKey = "the job's key: thirty-two bytes or more of secret";
const char* const kOtherKey = "a key of another job, also thirty-two bytes long";

ncclResult_t useKey(const char* key) {
  ncclEncryptionConfig_t config = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  config.mode = key ? NCCL_ENCRYPTION_MODE_PSK : NCCL_ENCRYPTION_MODE_NONE;
  config.psk = key;
  return ncclSetEncryption(&config);
}

// `n` ranks as processes, each setting keys[rank] before its init (the parent, which holds the rendezvous root, sets
// keys[0] before ncclGetUniqueId, as NCCL asks); body(rank, init result, comm) in each, a failed check its exit
// code. Ranks still running `stopAfter` after the first ended are killed (a rank left waiting for one that failed).
std::vector<int> ranks(int n, const std::vector<const char*>& keys,
                       const std::function<void(int, ncclResult_t, ncclComm_t)>& body,
                       std::chrono::seconds stopAfter = std::chrono::seconds(60)) {
  EXPECT_EQ(useKey(keys[0]), ncclSuccess);
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      [&] {
        ASSERT_EQ(useKey(keys[r]), ncclSuccess);
        ncclComm_t comm = nullptr;
        const ncclResult_t init = ncclCommInitRank(&comm, n, id, r);
        body(r, init, comm);
        if (init == ncclSuccess) {
          EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
        }
      }();
      _exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    pids.push_back(pid);
  }
  std::vector<int> statuses(n, -1);
  auto firstEnd = std::chrono::steady_clock::time_point::max();
  for (int left = n; left > 0;) {
    for (int r = 0; r < n; ++r) {
      if (statuses[r] != -1) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        statuses[r] = status;
        --left;
        firstEnd = std::min(firstEnd, std::chrono::steady_clock::now());
      } else if (left < n && std::chrono::steady_clock::now() > firstEnd + stopAfter) {
        kill(pids[r], SIGKILL);
      }
    }
    usleep(10000);
  }
  return statuses;
}

TEST(Encryption, CollectivesOverTlsAreExact) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 4 << 20;  // 16 MiB of floats: the tcp transport's direct transfers too
  const auto statuses = ranks(kRanks, {kKey, kKey, kKey}, [&](int r, ncclResult_t init, ncclComm_t comm) {
    ASSERT_EQ(init, ncclSuccess) << ncclGetLastError(nullptr);
    std::vector<float> data(kCount), out(kCount * kRanks);
    for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<float>((i % 1000) + r);
    ASSERT_EQ(ncclAllReduce(data.data(), out.data(), kCount, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
    for (size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(out[i], static_cast<float>(kRanks * (i % 1000) + 0 + 1 + 2)) << "element " << i;
    }
    ASSERT_EQ(ncclAllGather(data.data(), out.data(), kCount, ncclFloat32, comm, nullptr), ncclSuccess);
    for (int from = 0; from < kRanks; ++from)
      for (size_t i = 0; i < kCount; i += 4099)
        ASSERT_EQ(out[from * kCount + i], static_cast<float>((i % 1000) + from)) << "from " << from;
  });
  for (int r = 0; r < kRanks; ++r)
    EXPECT_TRUE(WIFEXITED(statuses[r]) && WEXITSTATUS(statuses[r]) == 0) << "rank " << r << ": " << statuses[r];
}

TEST(Encryption, ARankWithAnotherKeyFailsItsInitNamingTheHandshake) {
  const auto start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration failedAfter{};
  const auto statuses = ranks(
      2, {kKey, kOtherKey},
      [&](int r, ncclResult_t init, ncclComm_t) {
        if (r == 0) return;  // waits for rank 1 until it is stopped
        EXPECT_NE(init, ncclSuccess);
        const std::string why = ncclGetLastError(nullptr);
        EXPECT_NE(why.find("TLS handshake"), std::string::npos) << why;
      },
      std::chrono::seconds(1));
  failedAfter = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(WIFEXITED(statuses[1]) && WEXITSTATUS(statuses[1]) == 0) << "rank 1: " << statuses[1];
  EXPECT_LT(failedAfter, std::chrono::seconds(10)) << "the mismatch waited for the timeout";
}

TEST(Encryption, InvalidConfigsAreRefused) {
  ncclEncryptionConfig_t config = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  EXPECT_EQ(ncclSetEncryption(nullptr), ncclSuccess);  // plaintext
  EXPECT_EQ(ncclSetEncryption(&config), ncclSuccess);  // NCCL_ENCRYPTION_MODE_NONE
  config.mode = NCCL_ENCRYPTION_MODE_PSK;
  EXPECT_EQ(ncclSetEncryption(&config), ncclInvalidArgument);  // no key
  config.psk = "short";
  EXPECT_EQ(ncclSetEncryption(&config), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("at least 32"), std::string::npos) << ncclGetLastError(nullptr);
  config.mode = 7;
  config.psk = kKey;
  EXPECT_EQ(ncclSetEncryption(&config), ncclInvalidArgument);
  ncclEncryptionConfig_t unmade;
  memset(&unmade, 0, sizeof(unmade));
  unmade.mode = NCCL_ENCRYPTION_MODE_PSK;
  unmade.psk = kKey;
  EXPECT_EQ(ncclSetEncryption(&unmade), ncclInvalidArgument);
  config.mode = NCCL_ENCRYPTION_MODE_PSK;
  EXPECT_EQ(ncclSetEncryption(&config), ncclSuccess);
}

}  // namespace

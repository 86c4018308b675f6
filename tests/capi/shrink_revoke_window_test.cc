// What NCCL 2.28's nccl.h added, through the C API: ncclCommShrink (the survivors renumbered, also after a revoke),
// ncclCommRevoke, windows, and the two fp8 types.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"

namespace {

constexpr int kRanks = 4;

class Capi228 : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(ncclCommInitAll(comms_, kRanks, nullptr), ncclSuccess); }
  void TearDown() override {
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
  }

  // Runs body(rank) on one thread per rank in `ranks` (a communicator's calls block until its peers come).
  template <typename Body>
  static void onThreads(const std::vector<int>& ranks, Body body) {
    std::vector<std::thread> threads;
    for (int r : ranks) threads.emplace_back([&body, r] { body(r); });
    for (auto& t : threads) t.join();
  }

  // Shrinks away rank 2 on ranks 0, 1 and 3, checks the new numbering, and sums each new rank's (old rank + 1).
  void shrinkAwayRankTwo(int flags) {
    ncclComm_t shrunk[kRanks] = {};
    ncclResult_t results[kRanks] = {};
    float sums[kRanks] = {};
    int newRanks[kRanks] = {}, counts[kRanks] = {};
    onThreads({0, 1, 3}, [&](int r) {
      int excluded[] = {2};
      results[r] = ncclCommShrink(comms_[r], excluded, 1, &shrunk[r], nullptr, flags);
      if (results[r] != ncclSuccess) return;
      ncclCommUserRank(shrunk[r], &newRanks[r]);
      ncclCommCount(shrunk[r], &counts[r]);
      sums[r] = static_cast<float>(r + 1);
      results[r] = ncclAllReduce(&sums[r], &sums[r], 1, ncclFloat32, ncclSum, shrunk[r], nullptr);
    });
    for (int r : {0, 1, 3}) {
      EXPECT_EQ(results[r], ncclSuccess) << "rank " << r << ": " << ncclGetLastError(nullptr);
      EXPECT_EQ(counts[r], 3);
      EXPECT_EQ(sums[r], 1.0f + 2.0f + 4.0f);
      EXPECT_EQ(ncclCommDestroy(shrunk[r]), ncclSuccess);
    }
    EXPECT_EQ(newRanks[0], 0);
    EXPECT_EQ(newRanks[1], 1);
    EXPECT_EQ(newRanks[3], 2);
  }

  ncclComm_t comms_[kRanks];
};

TEST_F(Capi228, ShrinkRenumbersTheRemainingRanks) { shrinkAwayRankTwo(NCCL_SHRINK_DEFAULT); }

TEST_F(Capi228, ShrinkWithTheAbortFlagEndsTheParent) {
  shrinkAwayRankTwo(NCCL_SHRINK_ABORT);
  float x = 1;
  EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comms_[0], nullptr), ncclInvalidUsage);
}

// The survivors revoke the communicator a rank left, then shrink it away and go on.
TEST_F(Capi228, RevokeFailsLaterCallsAndLetsTheSurvivorsShrink) {
  EXPECT_EQ(ncclCommRevoke(comms_[0], 1), ncclInvalidArgument);
  for (int r : {0, 1, 3}) ASSERT_EQ(ncclCommRevoke(comms_[r], NCCL_REVOKE_DEFAULT), ncclSuccess);
  float x = 1;
  EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comms_[0], nullptr), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(comms_[0])).find("revoked"), std::string::npos) << ncclGetLastError(nullptr);
  ncclResult_t state = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comms_[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclSuccess);  // quiescent once ncclCommRevoke returned
  shrinkAwayRankTwo(NCCL_SHRINK_DEFAULT);
}

TEST_F(Capi228, ShrinkRejectsBadExcludeLists) {
  ncclComm_t out = nullptr;
  int self[] = {0}, outside[] = {kRanks}, twice[] = {1, 1};
  EXPECT_EQ(ncclCommShrink(comms_[0], self, 1, &out, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("exclude list"), std::string::npos);
  EXPECT_EQ(ncclCommShrink(comms_[0], outside, 1, &out, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(ncclCommShrink(comms_[0], twice, 2, &out, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(ncclCommShrink(comms_[0], nullptr, 1, &out, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(ncclCommShrink(comms_[0], outside, 1, &out, nullptr, 7), ncclInvalidArgument);
  EXPECT_EQ(out, nullptr);
}

TEST_F(Capi228, WindowsRegisterAndDeregister) {
  void* aligned = std::aligned_alloc(NCCL_WIN_REQUIRED_ALIGNMENT, 8192);
  ncclWindow_t win = nullptr, symmetric = nullptr;
  EXPECT_EQ(ncclCommWindowRegister(comms_[0], aligned, 8192, &win, NCCL_WIN_DEFAULT), ncclSuccess);
  EXPECT_EQ(ncclCommWindowRegister(comms_[0], aligned, 8192, &symmetric, NCCL_WIN_COLL_SYMMETRIC), ncclSuccess);
  EXPECT_NE(win, nullptr);
  EXPECT_NE(win, symmetric);
  ncclWindow_t misaligned = nullptr;
  EXPECT_EQ(
      ncclCommWindowRegister(comms_[0], static_cast<char*>(aligned) + 8, 64, &misaligned, NCCL_WIN_COLL_SYMMETRIC),
      ncclInvalidArgument);
  EXPECT_EQ(ncclCommWindowRegister(comms_[0], aligned, 64, &misaligned, 0x100), ncclInvalidArgument);  // no such flag
  EXPECT_EQ(misaligned, nullptr);
  EXPECT_EQ(ncclCommWindowDeregister(comms_[1], win), ncclInvalidArgument);  // another communicator's
  EXPECT_EQ(ncclCommWindowDeregister(comms_[0], win), ncclSuccess);
  EXPECT_EQ(ncclCommWindowDeregister(comms_[0], win), ncclInvalidArgument);  // already gone
  EXPECT_EQ(ncclCommWindowDeregister(comms_[0], symmetric), ncclSuccess);
  std::free(aligned);
}

// ncclFloat8e4m3 and ncclFloat8e5m2 (CUDA's __nv_fp8_e4m3 and __nv_fp8_e5m2 bits) in a sum and a PreMulSum.
TEST_F(Capi228, Float8AllReduce) {
  // e4m3: 1.0 = 0x38, 2.0 = 0x40, 4.0 = 0x48; e5m2: 1.0 = 0x3c, 4.0 = 0x44.
  uint8_t e4[kRanks], e5[kRanks], scaled[kRanks];
  ncclRedOp_t preMul[kRanks];
  const uint8_t two = 0x40;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    e4[r] = 0x38;
    e5[r] = 0x3c;
    scaled[r] = 0x38;
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&preMul[r], const_cast<uint8_t*>(&two), ncclFloat8e4m3, ncclScalarHostImmediate,
                                       comms_[r]),
              ncclSuccess);
    EXPECT_EQ(ncclAllReduce(&e4[r], &e4[r], 1, ncclFloat8e4m3, ncclSum, comms_[r], nullptr), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(&e5[r], &e5[r], 1, ncclFloat8e5m2, ncclSum, comms_[r], nullptr), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(&scaled[r], &scaled[r], 1, ncclFloat8e4m3, preMul[r], comms_[r], nullptr), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(e4[r], 0x48) << "rank " << r;      // 4.0
    EXPECT_EQ(e5[r], 0x44) << "rank " << r;      // 4.0
    EXPECT_EQ(scaled[r], 0x50) << "rank " << r;  // 8.0
    EXPECT_EQ(ncclRedOpDestroy(preMul[r], comms_[r]), ncclSuccess);
  }
}

}  // namespace

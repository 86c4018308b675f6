// ncclCommSplit through the C API: grouped splits of several ranks from one thread, strict colours, and an abort
// of the parent that ends a split waiting for ranks that never come.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "nccl.h"

namespace {

using Clock = std::chrono::steady_clock;

class CapiSplit : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(ncclCommInitAll(comms_, 3, nullptr), ncclSuccess); }
  void TearDown() override {
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
  }
  ncclComm_t comms_[3];
};

// NCCL allows splits inside a group; one thread splits every rank it drives, and the new communicators work.
TEST_F(CapiSplit, GroupedSplitsOfRanksOfOneThread) {
  ncclComm_t children[3] = {};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  // Ranks 0 and 2 form a communicator (rank 2 first, by key); rank 1 takes part with no colour.
  EXPECT_EQ(ncclCommSplit(comms_[0], 7, 1, &children[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommSplit(comms_[1], NCCL_SPLIT_NOCOLOR, 0, &children[1], nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommSplit(comms_[2], 7, 0, &children[2], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(children[1], nullptr);
  ASSERT_NE(children[0], nullptr);
  ASSERT_NE(children[2], nullptr);
  int rank0 = -1, rank2 = -1, count = 0;
  EXPECT_EQ(ncclCommUserRank(children[0], &rank0), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(children[2], &rank2), ncclSuccess);
  EXPECT_EQ(ncclCommCount(children[0], &count), ncclSuccess);
  EXPECT_EQ(rank0, 1);
  EXPECT_EQ(rank2, 0);
  EXPECT_EQ(count, 2);
  std::vector<float> a(100, 1.0f), b(100, 2.0f);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat32, ncclSum, children[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat32, ncclSum, children[2], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(a[99], 3.0f);
  EXPECT_EQ(b[0], 3.0f);
  EXPECT_EQ(ncclCommDestroy(children[0]), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(children[2]), ncclSuccess);
}

// Only NCCL_SPLIT_NOCOLOR (-1) means "no communicator"; another negative colour is an error, not the same.
TEST_F(CapiSplit, NegativeColoursOtherThanNoColorAreInvalid) {
  ncclComm_t child = nullptr;
  EXPECT_EQ(ncclCommSplit(comms_[0], -5, 0, &child, nullptr), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(comms_[0])).find("color -5"), std::string::npos)
      << ncclGetLastError(comms_[0]);
  EXPECT_EQ(child, nullptr);
}

// Ranks 1 and 2 never split: rank 0's split waits until another thread aborts its communicator, then fails at once
// instead of after CHORUS_TIMEOUT.
TEST_F(CapiSplit, AbortEndsAWaitingSplit) {
  ncclComm_t child = nullptr;
  ncclResult_t result = ncclSuccess;
  Clock::time_point returned;
  std::thread splitter([&] {
    result = ncclCommSplit(comms_[0], 0, 0, &child, nullptr);
    returned = Clock::now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto abortStart = Clock::now();
  EXPECT_EQ(ncclCommAbort(comms_[0]), ncclSuccess);
  splitter.join();
  const double ms = std::chrono::duration<double, std::milli>(returned - abortStart).count();
  printf("abort -> waiting split returned after %.3f ms\n", ms);
  EXPECT_NE(result, ncclSuccess);
  EXPECT_LT(ms, 1000);
  comms_[0] = nullptr;  // aborted: the handle is not destroyed again
}

}  // namespace

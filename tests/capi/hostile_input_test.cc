// Counts and sizes no buffer can hold, through the C API: each call is refused with ncclInvalidArgument before any
// byte moves (they used to fault, or to wrap around to a tiny operation that returned success), and no C++
// exception ever crosses the C boundary (an absurd rank count used to end the process with std::bad_alloc).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"

namespace {

class CapiHostileInput : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(ncclCommInitAll(comms_, 1, nullptr), ncclSuccess); }
  void TearDown() override { ncclCommDestroy(comms_[0]); }
  // The call was refused with a message about the count, and the communicator still works.
  void expectRefused(ncclResult_t result, const char* what) {
    EXPECT_EQ(result, ncclInvalidArgument) << what;
    EXPECT_NE(std::string(ncclGetLastError(comms_[0])).find("larger than any buffer"), std::string::npos)
        << what << ": " << ncclGetLastError(comms_[0]);
    float x = 2.0f;
    EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comms_[0], nullptr), ncclSuccess);
    EXPECT_EQ(x, 2.0f);
  }
  ncclComm_t comms_[1];
  std::vector<float> buffer_ = std::vector<float>(16, 1.0f);
};

TEST_F(CapiHostileInput, CountsBeyondAnyBufferAreRefused) {
  float* b = buffer_.data();
  ncclComm_t c = comms_[0];
  for (size_t count : {SIZE_MAX, SIZE_MAX / 2, SIZE_MAX / 4 + 2, SIZE_MAX / 8 + 1}) {
    SCOPED_TRACE(count);
    expectRefused(ncclAllReduce(b, b, count, ncclFloat32, ncclSum, c, nullptr), "AllReduce");
    expectRefused(ncclReduce(b, b, count, ncclFloat32, ncclSum, 0, c, nullptr), "Reduce");
    expectRefused(ncclReduceScatter(b, b, count, ncclFloat32, ncclSum, c, nullptr), "ReduceScatter");
    expectRefused(ncclAllGather(b, b, count, ncclFloat32, c, nullptr), "AllGather");
    expectRefused(ncclBroadcast(b, b, count, ncclFloat32, 0, c, nullptr), "Broadcast");
    expectRefused(ncclAlltoAll(b, b, count, ncclFloat32, c, nullptr), "AlltoAll");
    expectRefused(ncclGather(b, b, count, ncclFloat32, 0, c, nullptr), "Gather");
    expectRefused(ncclScatter(b, b, count, ncclFloat32, 0, c, nullptr), "Scatter");
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclSend(b, count, ncclFloat32, 0, c, nullptr), ncclInvalidArgument);
    EXPECT_EQ(ncclRecv(b, count, ncclFloat32, 0, c, nullptr), ncclInvalidArgument);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);  // nothing was queued
  }
}

// A buffer address so high that the count's bytes would wrap past the end of the address space.
TEST_F(CapiHostileInput, BuffersThatWrapAroundTheAddressSpaceAreRefused) {
  auto* high = reinterpret_cast<float*>(UINTPTR_MAX - 64);
  expectRefused(ncclAllReduce(high, high, 1024, ncclFloat32, ncclSum, comms_[0], nullptr), "AllReduce");
}

TEST_F(CapiHostileInput, MemAllocOfAnImpossibleSizeFails) {
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(ncclMemAlloc(&p, SIZE_MAX - 100), ncclSystemError);
}

// A Send to self with no Recv (or the reverse) is refused instead of leaving data for, or reading data from, another
// call: the next matched pair delivers its own data.
TEST_F(CapiHostileInput, SelfSendsAndRecvsMustPairUp) {
  ncclComm_t c = comms_[0];
  std::vector<float> stale(16, 7.0f), fresh(16, 3.0f), out(16, 0.0f);
  EXPECT_EQ(ncclSend(stale.data(), 16, ncclFloat32, 0, c, nullptr), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(c)).find("Recv(s) from it"), std::string::npos) << ncclGetLastError(c);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(stale.data(), 16, ncclFloat32, 0, c, nullptr), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_EQ(ncclRecv(out.data(), 16, ncclFloat32, 0, c, nullptr), ncclInvalidUsage);
  EXPECT_EQ(out[0], 0.0f);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fresh.data(), 16, ncclFloat32, 0, c, nullptr), ncclSuccess);
  EXPECT_EQ(ncclRecv(out.data(), 8, ncclFloat32, 0, c, nullptr), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);  // 64 bytes sent, 32 expected
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(fresh.data(), 16, ncclFloat32, 0, c, nullptr), ncclSuccess);
  EXPECT_EQ(ncclRecv(out.data(), 16, ncclFloat32, 0, c, nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(out, fresh);
}

// A billion ranks: an error code with a message at once, neither an exception through C (which ends the process)
// nor gigabytes of per-rank tables.
TEST(CapiHostileInit, AnAbsurdRankCountIsAnErrorNotACrash) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 1 << 30, id, 0), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("nranks 1073741824 outside [1, 4194304]"), std::string::npos)
      << ncclGetLastError(nullptr);
  EXPECT_EQ(comm, nullptr);
}

}  // namespace

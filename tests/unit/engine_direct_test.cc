// How the engine paces direct transfers between two ranks of one process (FIFO connections that read each other's
// memory): which bytes are on the stream before the peer has done anything, and that the results stay exact.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "algorithms/plan.hpp"
#include "engine/execution.hpp"
#include "tests/support/fifo_pair.hpp"

namespace chorus::engine {
namespace {

using algo::BufferKind;
using algo::Plan;
using algo::StepKind;

constexpr size_t kStep = 1 << 20;  // above every transport's direct threshold
using Pair = testing::FifoPair;

Plan sends(int count, size_t step = kStep) {
  Plan p;
  for (int i = 0; i < count; ++i) p.add({StepKind::kSend, 1, {BufferKind::kSend, i * step}, {}, step});
  return p;
}

// Bytes rank 0 puts on its stream to rank 1 when it runs `steps` sends alone, rank 1 taking nothing.
size_t streamBytesOfSends(int steps, std::vector<std::byte>& buffer) {
  Pair pair;
  auto sender = pair.execution(0);
  sender->bind(sends(steps), {buffer.data(), nullptr, nullptr, nullptr, 1}, {"test", 1});
  for (int round = 0; round < 100; ++round) {
    bool moved = false;
    EXPECT_TRUE(sender->advance(&moved).isOk());
  }
  EXPECT_FALSE(sender->done()) << "a direct send finished before its peer read it";
  return pair.toZero->recvData().size();
}

// A direct send whose descriptors are all out waits only for the peer to read it; the next send posts its own
// meanwhile. (A ring's next step forwards bytes this rank is still reducing: held behind the previous step's
// acknowledgement, the two ranks of an AllReduce copied their all-gather halves one after the other.)
TEST(EngineDirect, TheNextSendDoesNotWaitForThePreviousOnesAcknowledgement) {
  std::vector<std::byte> buffer(3 * kStep, std::byte{7});
  const size_t one = streamBytesOfSends(1, buffer);
  const size_t three = streamBytesOfSends(3, buffer);
  EXPECT_GT(one, 0u);
  // The same region, announced once: each later step adds its descriptors (of at most 512 KiB each) and no bytes.
  EXPECT_GT(three, one) << "the second send posted nothing while the first waited for its acknowledgement";
  EXPECT_LT(three, one + 1024) << "the sends' bytes went through the stream instead of directly";
}

// Rank 0 sends three blocks; rank 1 reduces the first into its own, then forwards the sum back, and receives the
// third: the pacing above must leave every byte exact.
void forwardReduction(size_t step) {
  Pair pair;
  const size_t n = step / sizeof(int32_t);
  std::vector<int32_t> send0(3 * n), recv0(n, -1), send1(n), recv1(2 * n, -1);
  std::iota(send0.begin(), send0.end(), 0);
  std::iota(send1.begin(), send1.end(), 1000);
  Plan p0 = sends(3, step);
  p0.add({StepKind::kRecv, 1, {}, {BufferKind::kRecv, 0}, step});
  Plan p1;
  const int reduced = p1.add({StepKind::kRecvReduce, 0, {BufferKind::kSend, 0}, {BufferKind::kRecv, 0}, step});
  p1.add({StepKind::kRecv, 0, {}, {BufferKind::kRecv, step}, step});
  p1.add({StepKind::kRecv, 0, {}, {BufferKind::kRecv, step}, step});
  p1.add({StepKind::kSend, 0, {BufferKind::kRecv, 0}, {}, step, reduced});
  auto e0 = pair.execution(0), e1 = pair.execution(1);
  const auto sum = kernels::reduceFunction(DataType::kInt32, RedOpKind::kSum);
  e0->bind(p0, {send0.data(), recv0.data(), nullptr, sum, sizeof(int32_t)}, {"test", 1});
  e1->bind(p1, {send1.data(), recv1.data(), nullptr, sum, sizeof(int32_t)}, {"test", 1});
  for (int round = 0; round < 1000000 && !(e0->done() && e1->done()); ++round) {
    bool moved = false;
    ASSERT_TRUE(e0->advance(&moved).isOk());
    ASSERT_TRUE(e1->advance(&moved).isOk());
  }
  ASSERT_TRUE(e0->done() && e1->done());
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(recv1[i], send0[i] + send1[i]) << i;
    ASSERT_EQ(recv0[i], recv1[i]) << i;
    ASSERT_EQ(recv1[n + i], send0[2 * n + i]) << i;
  }
}

TEST(EngineDirect, ForwardedReductionsStayExact) { forwardReduction(kStep); }

// From kStreamingThreshold a step's bytes are stored past the caches, a reduction's through its bounce buffer; an
// odd number of elements leaves a tail.
TEST(EngineDirect, LargeStepsStoredPastTheCachesStayExact) { forwardReduction(kStreamingThreshold + 12); }

}  // namespace
}  // namespace chorus::engine

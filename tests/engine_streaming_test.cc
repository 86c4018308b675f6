// Each plan of a call carries its own streaming threshold (Binding::streamingFrom): a group's operations write into
// buffers the communicator judged one by one, so one operation's steps may stream while another's keep plain stores,
// and the results are exact either way.
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
using transport::Stores;

constexpr size_t kBytes = 256 << 10;  // above the 64 KiB cold threshold, below kStreamingThreshold

Plan sendAll(size_t bytes) {
  Plan p;
  p.add({StepKind::kSend, 1, {BufferKind::kSend, 0}, {}, bytes});
  return p;
}

Plan receiveAll(size_t bytes) {
  Plan p;
  p.add({StepKind::kRecv, 0, {}, {BufferKind::kRecv, 0}, bytes});
  return p;
}

void runToEnd(Execution& a, Execution& b) {
  for (int round = 0; round < 1000000 && !(a.done() && b.done()); ++round) {
    bool moved = false;
    ASSERT_TRUE(a.advance(&moved).isOk());
    ASSERT_TRUE(b.advance(&moved).isOk());
  }
  ASSERT_TRUE(a.done() && b.done());
}

Binding into(void* recv, size_t streamingFrom) {
  Binding b{nullptr, recv, nullptr, nullptr, 1};
  b.streamingFrom = streamingFrom;
  return b;
}

Binding from(const void* send) { return {send, nullptr, nullptr, nullptr, 1}; }

// Two receives in one call (a group of two Recvs): the first into a buffer judged cold, the second into one judged
// cached.
TEST(EngineStreaming, EachPlanOfACallKeepsItsOwnThreshold) {
  testing::FifoPair pair(transport::FifoConnection::Direct::kNone);
  auto sender = pair.execution(0), receiver = pair.execution(1);
  std::vector<int32_t> first(kBytes / 4), second(kBytes / 4), out1(kBytes / 4, -1), out2(kBytes / 4, -1);
  std::iota(first.begin(), first.end(), 1);
  std::iota(second.begin(), second.end(), 1000000);
  sender->reset("test", 1, 2);
  sender->append(sendAll(kBytes), from(first.data()));
  sender->append(sendAll(kBytes), from(second.data()));
  receiver->reset("test", 1, 2);
  receiver->append(receiveAll(kBytes), into(out1.data(), 64 << 10));
  receiver->append(receiveAll(kBytes), into(out2.data(), kStreamingThreshold));
  EXPECT_EQ(receiver->storesOf(0), Stores::kStreaming);
  EXPECT_EQ(receiver->storesOf(1), Stores::kCached);
  runToEnd(*sender, *receiver);
  EXPECT_EQ(out1, first);
  EXPECT_EQ(out2, second);
}

// A call repeated on another buffer (the communicator's fast path) sets its one plan's threshold again; a reset
// forgets the plans' thresholds with their steps.
TEST(EngineStreaming, ARepeatedCallTakesItsNewThresholdAndAResetForgetsIt) {
  testing::FifoPair pair(transport::FifoConnection::Direct::kNone);
  auto sender = pair.execution(0), receiver = pair.execution(1);
  std::vector<int32_t> in(kBytes / 4), out(kBytes / 4, -1);
  std::iota(in.begin(), in.end(), 7);
  sender->reset("test", 1);
  sender->append(sendAll(kBytes), from(in.data()));
  receiver->reset("test", 1);
  receiver->append(receiveAll(kBytes), into(out.data(), kStreamingThreshold));
  EXPECT_EQ(receiver->storesOf(0), Stores::kCached);
  runToEnd(*sender, *receiver);
  EXPECT_EQ(out, in);

  std::fill(out.begin(), out.end(), -1);
  sender->rewind(2);
  receiver->setStreamingFrom(0, 64 << 10);
  receiver->rewind(2);
  EXPECT_EQ(receiver->storesOf(0), Stores::kStreaming);
  runToEnd(*sender, *receiver);
  EXPECT_EQ(out, in);

  receiver->reset("test", 3);
  receiver->append(receiveAll(kBytes), into(out.data(), kStreamingThreshold));
  EXPECT_EQ(receiver->storesOf(0), Stores::kCached);
}

}  // namespace
}  // namespace chorus::engine

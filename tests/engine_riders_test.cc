// A large local copy of the bytes a send takes (a Broadcast root's own copy, an AllGather's own block) rides along
// with that send through the stream, so its input is read once: it is written piece by piece as the send moves,
// it runs by itself where the send goes direct or a step waits for it, and the results stay exact either way.
#include <gtest/gtest.h>

#include <cstring>
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
using Direct = transport::FifoConnection::Direct;

constexpr size_t kBytes = (1 << 20) + 12;  // above the engine's large-local size, with a tail
constexpr int32_t kUntouched = -1;

// Rank 0 sends its input to rank 1 and copies it to its own output; `awaited` adds a send of that output which
// waits for the copy, as a ring's forwarding does.
Plan broadcastRoot(size_t bytes, bool awaited) {
  Plan p;
  p.add({StepKind::kSend, 1, {BufferKind::kSend, 0}, {}, bytes});
  const int copy = p.add({StepKind::kCopy, -1, {BufferKind::kSend, 0}, {BufferKind::kRecv, 0}, bytes});
  if (awaited) p.add({StepKind::kSend, 1, {BufferKind::kRecv, 0}, {}, bytes, copy});
  return p;
}

Plan receiver(size_t bytes, bool awaited) {
  Plan p;
  p.add({StepKind::kRecv, 0, {}, {BufferKind::kRecv, 0}, bytes});
  if (awaited) p.add({StepKind::kRecv, 0, {}, {BufferKind::kRecv, bytes}, bytes});
  return p;
}

struct Buffers {
  explicit Buffers(size_t bytes, bool awaited)
      : input(bytes / sizeof(int32_t) + 1),
        rootOut(input.size(), kUntouched),
        peerOut((awaited ? 2 : 1) * input.size(), kUntouched) {
    std::iota(input.begin(), input.end(), 7);
  }
  // Bytes of the root's output that hold the input, counted from the start.
  size_t copiedPrefix(size_t bytes) const {
    const auto* out = reinterpret_cast<const std::byte*>(rootOut.data());
    const auto* in = reinterpret_cast<const std::byte*>(input.data());
    size_t i = 0;
    while (i < bytes && out[i] == in[i]) ++i;
    return i;
  }
  std::vector<int32_t> input, rootOut, peerOut;
};

// Rank 0 alone for `rounds` rounds (its peer takes nothing, so the stream fills up), then both to the end.
void run(Direct direct, size_t bytes, bool awaited, Buffers& b, size_t* copiedAlone) {
  testing::FifoPair pair(direct);
  auto root = pair.execution(0), peer = pair.execution(1);
  root->reset("test", 1);
  root->append(broadcastRoot(bytes, awaited), {b.input.data(), b.rootOut.data(), nullptr, nullptr, 1});
  peer->reset("test", 1);
  peer->append(receiver(bytes, awaited), {nullptr, b.peerOut.data(), nullptr, nullptr, 1});
  for (int round = 0; round < 100; ++round) {
    bool moved = false;
    ASSERT_TRUE(root->advance(&moved).isOk());
  }
  *copiedAlone = b.copiedPrefix(bytes);
  for (int round = 0; round < 1000000 && !(root->done() && peer->done()); ++round) {
    bool moved = false;
    ASSERT_TRUE(root->advance(&moved).isOk());
    ASSERT_TRUE(peer->advance(&moved).isOk());
  }
  ASSERT_TRUE(root->done() && peer->done());
  ASSERT_EQ(memcmp(b.rootOut.data(), b.input.data(), bytes), 0);
  ASSERT_EQ(memcmp(b.peerOut.data(), b.input.data(), bytes), 0);
  if (awaited) ASSERT_EQ(memcmp(reinterpret_cast<std::byte*>(b.peerOut.data()) + bytes, b.input.data(), bytes), 0);
}

// Through the stream (no direct transfers, or a buffer the peer cannot reach), the copy writes only what the send
// has put on the stream: with the peer taking nothing, at most the FIFO's bytes.
TEST(EngineRiders, TheCopyMovesWithItsSendThroughTheStream) {
  for (Direct direct : {Direct::kNone, Direct::kSharedBlocks}) {
    for (size_t bytes : {kBytes, kStreamingThreshold + 12}) {
      Buffers b(bytes, false);
      size_t alone = 0;
      run(direct, bytes, false, b, &alone);
      EXPECT_GT(alone, 0u) << bytes;
      EXPECT_LE(alone, testing::FifoPair::kFifoBytes) << "the copy ran ahead of its send, " << bytes << " bytes";
    }
  }
}

// A send that goes direct reads the input where it is: the copy runs by itself, whole, before the peer reads.
TEST(EngineRiders, TheCopyRunsByItselfWhereItsSendGoesDirect) {
  Buffers b(kBytes, false);
  size_t alone = 0;
  run(Direct::kSameProcess, kBytes, false, b, &alone);
  EXPECT_EQ(alone, kBytes);
}

// In place the copy has nothing to do; the send still rides through the stream.
TEST(EngineRiders, InPlaceTheSendGoesAlone) {
  Buffers b(kBytes, false);
  testing::FifoPair pair(Direct::kNone);
  auto root = pair.execution(0), peer = pair.execution(1);
  root->reset("test", 1);
  root->append(broadcastRoot(kBytes, false), {b.input.data(), b.input.data(), nullptr, nullptr, 1});
  peer->reset("test", 1);
  peer->append(receiver(kBytes, false), {nullptr, b.peerOut.data(), nullptr, nullptr, 1});
  for (int round = 0; round < 1000000 && !(root->done() && peer->done()); ++round) {
    bool moved = false;
    ASSERT_TRUE(root->advance(&moved).isOk());
    ASSERT_TRUE(peer->advance(&moved).isOk());
  }
  ASSERT_TRUE(root->done() && peer->done());
  EXPECT_EQ(memcmp(b.peerOut.data(), b.input.data(), kBytes), 0);
  EXPECT_EQ(b.input[0], 7);
}

// A copy that a later step waits for does not ride: it runs whole by itself even while its send cannot move.
TEST(EngineRiders, ACopyThatAStepWaitsForRunsByItself) {
  Buffers b(kBytes, true);
  size_t alone = 0;
  run(Direct::kNone, kBytes, true, b, &alone);
  EXPECT_EQ(alone, kBytes);
}

}  // namespace
}  // namespace chorus::engine

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

struct Case {
  Direct direct = Direct::kNone;
  size_t bytes = kBytes;
  bool awaited = false;  // a later send waits for the copy
  bool inPlace = false;  // the root's output is its input
};

// Rank 0 alone for 100 rounds (its peer takes nothing, so the stream fills up), then both to the end; returns how
// much of the root's output held its input after the rounds alone.
size_t run(const Case& c, Buffers& b) {
  testing::FifoPair pair(c.direct);
  auto root = pair.execution(0), peer = pair.execution(1);
  int32_t* rootOut = c.inPlace ? b.input.data() : b.rootOut.data();
  root->bind(broadcastRoot(c.bytes, c.awaited), {b.input.data(), rootOut, nullptr, nullptr, 1}, {"test", 1});
  peer->bind(receiver(c.bytes, c.awaited), {nullptr, b.peerOut.data(), nullptr, nullptr, 1}, {"test", 1});
  for (int round = 0; round < 100; ++round) {
    bool moved = false;
    EXPECT_TRUE(root->advance(&moved).isOk());
  }
  const size_t copiedAlone = b.copiedPrefix(c.bytes);
  for (int round = 0; round < 1000000 && !(root->done() && peer->done()); ++round) {
    bool moved = false;
    EXPECT_TRUE(root->advance(&moved).isOk());
    EXPECT_TRUE(peer->advance(&moved).isOk());
  }
  EXPECT_TRUE(root->done() && peer->done());
  std::vector<int32_t> expected(b.input.size());
  std::iota(expected.begin(), expected.end(), 7);
  EXPECT_EQ(memcmp(rootOut, expected.data(), c.bytes), 0);
  EXPECT_EQ(memcmp(b.peerOut.data(), expected.data(), c.bytes), 0);
  if (c.awaited) {
    EXPECT_EQ(memcmp(reinterpret_cast<std::byte*>(b.peerOut.data()) + c.bytes, expected.data(), c.bytes), 0);
  }
  return copiedAlone;
}

// Through the stream (no direct transfers, or a buffer the peer cannot reach), the copy writes only what the send
// has put on the stream: with the peer taking nothing, at most the FIFO's bytes.
TEST(EngineRiders, TheCopyMovesWithItsSendThroughTheStream) {
  for (Direct direct : {Direct::kNone, Direct::kSharedBlocks}) {
    for (size_t bytes : {kBytes, kStreamingThreshold + 12}) {
      Buffers b(bytes, false);
      const size_t alone = run({direct, bytes}, b);
      EXPECT_GT(alone, 0u) << bytes;
      EXPECT_LE(alone, testing::FifoPair::kFifoBytes) << "the copy ran ahead of its send, " << bytes << " bytes";
    }
  }
}

// A send that goes direct reads the input where it is: the copy runs by itself, whole, before the peer reads.
TEST(EngineRiders, TheCopyRunsByItselfWhereItsSendGoesDirect) {
  Buffers b(kBytes, false);
  EXPECT_EQ(run({Direct::kSameProcess}, b), kBytes);
}

// In place the copy has nothing to do; the send goes alone and the input stays as it was.
TEST(EngineRiders, InPlaceTheSendGoesAlone) {
  Buffers b(kBytes, false);
  run({.inPlace = true}, b);
}

// A copy that a later step waits for does not ride: it runs whole by itself even while its send cannot move.
TEST(EngineRiders, ACopyThatAStepWaitsForRunsByItself) {
  Buffers b(kBytes, true);
  EXPECT_EQ(run({.awaited = true}, b), kBytes);
}

}  // namespace
}  // namespace chorus::engine

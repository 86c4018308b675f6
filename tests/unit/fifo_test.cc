// The FIFO under the in-process and shared-memory transports: the byte stream and the small-message line channel,
// alone and with a producer and a consumer on two threads; the stream's early wraps.
#include "transports/fifo.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "transports/fifo_lap.hpp"

namespace chorus::transport {
namespace {

struct FifoMemory {
  explicit FifoMemory(size_t capacity) : memory(Fifo::allocate(Fifo::bytesFor(capacity)), free) {
    Fifo(memory.get(), capacity, true);
  }
  Fifo view(size_t capacity) { return Fifo(memory.get(), capacity, false); }
  std::unique_ptr<void, decltype(&free)> memory;
};

std::vector<std::byte> pattern(size_t bytes, uint32_t seed) {
  std::vector<std::byte> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<std::byte>((seed * 2654435761u + i * 40503u) >> 7);
  return out;
}

TEST(FifoLines, MessagesArriveWholeAndInOrderAcrossTheWrap) {
  constexpr size_t kCapacity = 64 << 10;
  FifoMemory memory(kCapacity);
  Fifo producer = memory.view(kCapacity), consumer = memory.view(kCapacity);
  std::vector<std::byte> got(Fifo::kSmallMessage);
  // Enough messages to wrap the line ring many times, every length from 1 to the limit.
  for (uint32_t m = 0; m < 5000; ++m) {
    const size_t bytes = 1 + m % Fifo::kSmallMessage;
    const auto sent = pattern(bytes, m);
    EXPECT_FALSE(consumer.linesWaiting());
    ASSERT_TRUE(producer.sendLines(sent.data(), bytes)) << m;
    EXPECT_TRUE(consumer.linesWaiting());
    ASSERT_TRUE(consumer.recvLines(got.data(), bytes)) << m;
    ASSERT_EQ(memcmp(got.data(), sent.data(), bytes), 0) << m;
  }
}

// A message of a head (a call header) and a payload, one line or several, arrives as the two parts in order; an
// empty message writes nothing.
TEST(FifoLines, TwoPartMessagesArriveWholeAndEmptyOnesWriteNothing) {
  constexpr size_t kCapacity = 64 << 10;
  FifoMemory memory(kCapacity);
  Fifo producer = memory.view(kCapacity), consumer = memory.view(kCapacity);
  const auto head = pattern(Line::kPayload, 7);
  const auto payload = pattern(3 * Line::kPayload, 8);
  std::vector<std::byte> got(4 * Line::kPayload);
  for (size_t headBytes : {size_t{0}, size_t{1}, size_t{16}, Line::kPayload}) {
    for (size_t bytes = 0; bytes <= 2 * Line::kPayload + 3; ++bytes) {
      if (headBytes + bytes == 0) {
        ASSERT_TRUE(producer.sendLines(head.data(), 0, payload.data(), 0));
        EXPECT_FALSE(consumer.linesWaiting());
        continue;
      }
      ASSERT_TRUE(producer.sendLines(head.data(), headBytes, payload.data(), bytes));
      ASSERT_TRUE(consumer.recvLines(got.data(), headBytes + bytes)) << headBytes << " + " << bytes;
      ASSERT_EQ(memcmp(got.data(), head.data(), headBytes), 0) << headBytes << " + " << bytes;
      ASSERT_EQ(memcmp(got.data() + headBytes, payload.data(), bytes), 0) << headBytes << " + " << bytes;
      EXPECT_FALSE(consumer.linesWaiting());
    }
  }
}

TEST(FifoLines, AFullRingRefusesUntilTheConsumerTakes) {
  constexpr size_t kCapacity = 64 << 10;
  FifoMemory memory(kCapacity);
  Fifo producer = memory.view(kCapacity), consumer = memory.view(kCapacity);
  const auto message = pattern(Line::kPayload, 1);  // one line each
  std::vector<std::byte> got(Line::kPayload);
  for (uint64_t i = 0; i < LineArea::kLines; ++i) ASSERT_TRUE(producer.sendLines(message.data(), message.size()));
  EXPECT_FALSE(producer.sendLines(message.data(), message.size()));
  ASSERT_TRUE(consumer.recvLines(got.data(), got.size()));
  EXPECT_TRUE(producer.sendLines(message.data(), message.size()));
}

TEST(FifoLines, AMessageIsTakenOnlyWhenAllItsLinesArrived) {
  constexpr size_t kCapacity = 64 << 10;
  FifoMemory memory(kCapacity);
  Fifo producer = memory.view(kCapacity), consumer = memory.view(kCapacity);
  const auto one = pattern(Line::kPayload, 3);
  std::vector<std::byte> got(2 * Line::kPayload);
  ASSERT_TRUE(producer.sendLines(one.data(), one.size()));
  // The consumer expects a two-line message: one line is there, so it waits.
  EXPECT_FALSE(consumer.recvLines(got.data(), got.size()));
  ASSERT_TRUE(producer.sendLines(one.data(), one.size()));
  EXPECT_TRUE(consumer.recvLines(got.data(), got.size()));
}

TEST(FifoLines, TwoThreadsExchangeRandomMessagesBesideTheStream) {
  constexpr size_t kCapacity = 64 << 10;
  constexpr uint32_t kMessages = 20000;
  FifoMemory memory(kCapacity);
  Fifo producer = memory.view(kCapacity), consumer = memory.view(kCapacity);
  std::thread sender([&] {
    std::mt19937 rng(7);
    for (uint32_t m = 0; m < kMessages; ++m) {
      const size_t bytes = 1 + rng() % Fifo::kSmallMessage;
      const auto sent = pattern(bytes, m);
      while (!producer.sendLines(sent.data(), bytes)) std::this_thread::yield();
    }
  });
  std::mt19937 rng(7);
  std::vector<std::byte> got(Fifo::kSmallMessage);
  size_t bad = 0;
  for (uint32_t m = 0; m < kMessages; ++m) {
    const size_t bytes = 1 + rng() % Fifo::kSmallMessage;
    while (!consumer.recvLines(got.data(), bytes)) std::this_thread::yield();
    const auto expected = pattern(bytes, m);
    bad += memcmp(got.data(), expected.data(), bytes) != 0 ? 1 : 0;
  }
  sender.join();
  EXPECT_EQ(bad, 0u);
}

// Writes up to `bytes` of `data` from `from` on, as far as the FIFO takes them; returns how many went.
size_t produceSome(Fifo& producer, const std::vector<std::byte>& data, size_t from, size_t bytes) {
  auto space = producer.writable();
  const size_t n = std::min({space.size(), bytes, data.size() - from});
  memcpy(space.data(), data.data() + from, n);
  producer.produce(n);
  return n;
}

// Takes whatever is ready into `out` at `at`; returns how many bytes.
size_t consumeSome(Fifo& consumer, std::vector<std::byte>& out, size_t at) {
  auto ready = consumer.readable();
  memcpy(out.data() + at, ready.data(), ready.size());
  consumer.consume(ready.size());
  return ready.size();
}

constexpr FifoLap kLap = kSharedCoreLap;
constexpr size_t kNoBulk = ~size_t{0};

// Streams 3 capacities and a bit through a FIFO whose consumer stays at most a piece behind, in pieces of `piece`
// bytes; returns the furthest offset into the buffer at which the producer was given room.
size_t furthestWrite(FifoLap lap, size_t piece = 256 << 10) {
  constexpr size_t kCapacity = 4 << 20;
  FifoMemory memory(kCapacity);
  Fifo producer = memory.view(kCapacity), consumer = memory.view(kCapacity);
  producer.wrapEarly(lap);
  const auto data = pattern(3 * kCapacity + 12345, 5);
  std::vector<std::byte> got(data.size());
  size_t sent = 0, received = 0;
  std::byte* furthest = producer.data();
  while (received < data.size()) {
    furthest = std::max(furthest, producer.writable().data());
    sent += produceSome(producer, data, sent, piece);
    received += consumeSome(consumer, got, received);
  }
  EXPECT_EQ(memcmp(got.data(), data.data(), data.size()), 0);
  return static_cast<size_t>(furthest - producer.data());
}

TEST(FifoStream, WrapsEarlyWhenTheConsumerKeepsUp) {
  constexpr size_t kPiece = 256 << 10, kLong = 2 << 20;
  // The bytes cycle through the buffer's first lap and a piece, never its end.
  EXPECT_LT(furthestWrite(kLap), kLap.bytes + kPiece);
  const size_t longLap = furthestWrite({kLong, kLong, kNoBulk});
  EXPECT_GE(longLap, kLong - kPiece) << "a longer lap goes further before it wraps";
  EXPECT_LT(longLap, kLong + kPiece);
  EXPECT_GE(furthestWrite({4 << 20, 4 << 20, kNoBulk}), (size_t{4} << 20) - kPiece)
      << "a lap of the whole capacity never wraps early";
}

// After a bulk piece the producer wraps at the bulk lap; smaller pieces go the whole lap.
TEST(FifoStream, BulkPiecesTakeTheShorterLap) {
  constexpr size_t kLong = 2 << 20, kShort = 512 << 10, kBulk = 256 << 10;
  const FifoLap lap{kLong, kShort, kBulk};
  EXPECT_LT(furthestWrite(lap, kBulk), kShort + kBulk);
  EXPECT_GE(furthestWrite(lap, kBulk / 2), kLong - kBulk / 2);
}

// Laps past the reader's private cache where every rank has a core; short ones where ranks take turns on cores.
TEST(FifoLap, LongerThanThePrivateCacheUnlessRanksShareCores) {
  constexpr size_t kL3 = 32 << 20;
  EXPECT_EQ(fifoLaps(2, 2, 1 << 20, kL3).initial().bytes, size_t{2} << 20);
  EXPECT_EQ(fifoLaps(2, 2, 1 << 20, kL3).initial().bulkBytes, kShortLap);
  EXPECT_EQ(fifoLaps(8, 64, 2 << 20, kL3).forPeers(7).bytes, size_t{4} << 20);
  EXPECT_EQ(fifoLaps(8, 64, 2 << 20, kL3).forPeers(1).bytes, size_t{4} << 20) << "cores enough: peers do not matter";
  EXPECT_EQ(fifoLaps(3, 2, 1 << 20, kL3).initial().bytes, kShortLap);
  EXPECT_EQ(fifoLaps(4, 2, 1 << 20, kL3).initial().bytes, kShortLap) << "12 FIFOs of 512 KiB: 6 MiB";
  EXPECT_EQ(fifoLaps(2, 2, 128 << 10, kL3).initial().bytes, kShortLap) << "never shorter than the short lap";
}

// Where ranks share cores, the FIFOs their calls write share a quarter of the last-level cache, from 4 ranks one
// part in as many as there are ranks, in laps of 64-512 KiB: an AlltoAll's peers get short laps, a ring's one peer
// the longest.
TEST(FifoLap, RanksSharingCoresShareTheLastLevelCache) {
  constexpr size_t kL3 = 32 << 20;
  const FifoLaps eight = fifoLaps(8, 2, 1 << 20, kL3);
  EXPECT_EQ(eight.initial().bytes, size_t{72} << 10) << "56 FIFOs in an eighth of the cache, in whole pages";
  EXPECT_EQ(eight.forPeers(7).bytes, eight.initial().bytes);
  EXPECT_EQ(eight.initial().bulkBytes, eight.initial().bytes);
  EXPECT_LE(56 * eight.initial().bytes, kL3 / 8);
  EXPECT_EQ(eight.forPeers(3).bytes, size_t{168} << 10) << "recursive doubling's 24 FIFOs";
  EXPECT_EQ(eight.forPeers(1).bytes, kShortLap) << "a ring's 8 FIFOs";
  EXPECT_EQ(fifoLaps(4, 2, 1 << 20, kL3).initial().bytes, kShortLap)
      << "4 ranks: 12 FIFOs in a quarter, at most 512 KiB";
  EXPECT_EQ(fifoLaps(3, 2, 1 << 20, kL3).initial().bytes, kShortLap);
  EXPECT_EQ(fifoLaps(16, 2, 1 << 20, kL3).initial().bytes, kShortestLap) << "240 FIFOs: the shortest lap";
  EXPECT_EQ(fifoLaps(8, 2, 1 << 20, 256 << 20).initial().bytes, kShortLap) << "a larger cache holds them at 512 KiB";
}

// CHORUS_SHM_BUFFER=auto (0): FIFOs of 4 MiB where each rank has a core, of two of the longest laps where ranks share
// cores; a size set wins.
TEST(FifoLap, FifosOfTwoLapsWhereRanksShareCoresUnlessSet) {
  constexpr size_t kL3 = 32 << 20;
  EXPECT_EQ(fifoLaps(2, 2, 1 << 20, kL3).fifoBytes(0), 4 << 20);
  EXPECT_EQ(fifoLaps(8, 64, 2 << 20, kL3).fifoBytes(0), 4 << 20);
  EXPECT_EQ(fifoLaps(4, 2, 1 << 20, kL3).fifoBytes(0), 1 << 20);
  EXPECT_EQ(fifoLaps(8, 2, 1 << 20, kL3).fifoBytes(0), 2 * static_cast<int64_t>(kShortLap));
  EXPECT_EQ(fifoLaps(4, 2, 1 << 20, kL3).fifoBytes(4 << 20), 4 << 20) << "the setting's size";
  EXPECT_EQ(fifoLaps(2, 2, 1 << 20, kL3).fifoBytes(256 << 10), 256 << 10);
}

// From a transport's context: the ranks on this rank's machine against the cores they may run on (machineLoad).
TEST(FifoLap, CountsTheRanksOnThisMachine) {
  const size_t privateCache = sysconfPrivateCacheBytes() > 0 ? sysconfPrivateCacheBytes() : kAssumedPrivateCache;
  const size_t sharedCache = lastLevelCacheBytes() > 0 ? lastLevelCacheBytes() : kAssumedSharedCache;
  std::vector<PeerInfo> peers(4);
  for (size_t r = 0; r < peers.size(); ++r) {
    peers[r].rank = static_cast<int>(r);
    peers[r].machineId = r == 1 ? "here" : "elsewhere";
    peers[r].cpus = {0, 1};
  }
  ConnectContext ctx;
  ctx.rank = 1;
  ctx.nranks = static_cast<int>(peers.size());
  ctx.peers = &peers;
  EXPECT_EQ(fifoLaps(ctx).initial().bytes, fifoLaps(1, 2, privateCache, sharedCache).initial().bytes)
      << "the ranks elsewhere do not share this machine's cores";
  for (auto& peer : peers) peer.machineId = "here";
  const FifoLaps shared = fifoLaps(ctx);
  EXPECT_GT(shared.sharedBudget, 0u) << "4 ranks here on 2 cores";
  EXPECT_EQ(shared.peersOnMachine, 3);
  EXPECT_EQ(shared.initial().bytes, fifoLaps(4, 2, privateCache, sharedCache).initial().bytes);
  EXPECT_LE(shared.initial().bytes, kShortLap);
  for (size_t r = 0; r < peers.size(); ++r) peers[r].cpus = {static_cast<int>(r)};
  EXPECT_EQ(fifoLaps(ctx).sharedBudget, 0u) << "bound one to a core, the 4 ranks have 4";
}

// Fills the FIFO as far as it takes bytes; returns how many went.
size_t fill(Fifo& producer, const std::vector<std::byte>& data, size_t* sent) {
  size_t filled = 0;
  for (size_t n; (n = produceSome(producer, data, *sent, data.size())) > 0; filled += n) *sent += n;
  return filled;
}

TEST(FifoStream, AConsumerThatFallsBehindStillGetsTheWholeCapacity) {
  constexpr size_t kCapacity = 4 << 20;
  FifoMemory memory(kCapacity);
  Fifo producer = memory.view(kCapacity), consumer = memory.view(kCapacity);
  producer.wrapEarly(kLap);
  const auto data = pattern(4 * kCapacity, 6);
  std::vector<std::byte> got(data.size());
  size_t sent = 0, received = 0;
  EXPECT_EQ(fill(producer, data, &sent), kCapacity);  // the consumer has not started
  while (received < sent) received += consumeSome(consumer, got, received);
  // 768 KiB into a lap and empty: the producer wraps, and has the whole capacity though the consumer has not
  // moved past the wrap yet.
  sent += produceSome(producer, data, sent, 768 << 10);
  received += consumeSome(consumer, got, received);
  EXPECT_EQ(producer.writable().data(), producer.data());
  EXPECT_EQ(fill(producer, data, &sent), kCapacity);
  while (received < sent) received += consumeSome(consumer, got, received);
  EXPECT_EQ(memcmp(got.data(), data.data(), received), 0);
}

TEST(FifoStream, BytesInFlightKeepTheProducerOnItsLap) {
  constexpr size_t kCapacity = 4 << 20;
  FifoMemory memory(kCapacity);
  Fifo producer = memory.view(kCapacity), consumer = memory.view(kCapacity);
  producer.wrapEarly(kLap);
  const auto data = pattern(kCapacity, 8);
  size_t sent = produceSome(producer, data, 0, 768 << 10);
  consumer.consume(512 << 10);  // 256 KiB still to read
  EXPECT_EQ(producer.writable().data(), producer.data() + sent);
}

TEST(FifoStream, TwoThreadsStreamThroughEarlyWraps) {
  constexpr size_t kCapacity = 2 << 20;
  FifoMemory memory(kCapacity);
  Fifo producer = memory.view(kCapacity), consumer = memory.view(kCapacity);
  producer.wrapEarly(kLap);
  const auto data = pattern(64 << 20, 7);
  std::vector<std::byte> got(data.size());
  std::thread sender([&] {
    std::mt19937 rng(11);
    for (size_t sent = 0; sent < data.size();) {
      const size_t n = produceSome(producer, data, sent, 1 + rng() % (300 << 10));
      if (n == 0) std::this_thread::yield();
      sent += n;
    }
  });
  for (size_t received = 0; received < data.size();) {
    const size_t n = consumeSome(consumer, got, received);
    if (n == 0) std::this_thread::yield();
    received += n;
  }
  sender.join();
  EXPECT_EQ(memcmp(got.data(), data.data(), data.size()), 0);
}

}  // namespace
}  // namespace chorus::transport

// The FIFO under the in-process and shared-memory transports: the byte stream and the small-message line channel,
// alone and with a producer and a consumer on two threads.
#include "transports/fifo.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

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

}  // namespace
}  // namespace chorus::transport

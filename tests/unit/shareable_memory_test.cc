// Shareable host blocks (ncclMemAlloc on host memory) and how a peer reads them in place: the block registry, the
// receiver's mappings (a freed block's descriptor number coming back with a new block), and a sender's registration
// going stale when its buffer is freed and allocated again.
#include "core/shareable_memory.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "transports/fifo_connection.hpp"
#include "transports/peer_blocks.hpp"

namespace chorus::transport {
namespace {

TEST(ShareableMemory, BlocksAreFoundByAnyRangeInsideThemAndForgottenWhenFreed) {
  void* p = nullptr;
  ASSERT_TRUE(allocateShareable(10000, &p).isOk());
  auto* bytes = static_cast<std::byte*>(p);
  ShareableBlock block;
  ASSERT_TRUE(findShareable(bytes + 100, 1000, &block));
  EXPECT_EQ(block.base, bytes);
  EXPECT_GE(block.bytes, 10000u);
  EXPECT_EQ(block.bytes % static_cast<size_t>(sysconf(_SC_PAGESIZE)), 0u);
  EXPECT_TRUE(findShareable(bytes, block.bytes, &block));
  EXPECT_FALSE(findShareable(bytes + 1, block.bytes, &block)) << "a range past the block's end";
  EXPECT_FALSE(findShareable(bytes - 1, 2, &block)) << "a range before the block";
  std::vector<char> plain(64);
  EXPECT_FALSE(findShareable(plain.data(), plain.size(), &block));
  EXPECT_EQ(static_cast<unsigned char>(bytes[9999]), 0) << "blocks start zeroed";
  EXPECT_FALSE(freeShareable(bytes + 4096)) << "only a block's start frees it";
  EXPECT_TRUE(freeShareable(p));
  EXPECT_FALSE(findShareable(p, 1, &block));
  EXPECT_FALSE(freeShareable(p));
}

// This process plays the peer: it maps its own blocks through /proc/<pid>/fd, as a peer process does.
TEST(PeerBlocks, ReadsInPlaceAndReadsTheNewBlockBehindAReusedDescriptor) {
  PeerBlocks peer(1, getpid());
  void* first = nullptr;
  ASSERT_TRUE(allocateShareable(1 << 20, &first).isOk());
  memset(first, 0x11, 1 << 20);
  ShareableBlock block;
  ASSERT_TRUE(findShareable(first, 1 << 20, &block));
  const BlockRange range = BlockRange::of(block, static_cast<std::byte*>(first) + 4096, 8192);
  BlockRange decoded;
  ASSERT_TRUE(BlockRange::decode(range.encode(), &decoded));
  EXPECT_EQ(decoded.offset, 4096u);
  std::vector<unsigned char> out(100);
  ASSERT_TRUE(peer.read(out.data(), decoded, 50, out.size(), Stores::kCached).isOk());
  EXPECT_EQ(out[0], 0x11);
  EXPECT_FALSE(peer.read(out.data(), decoded, 8192 - 10, out.size(), Stores::kCached).isOk())
      << "past the region's end";
  // Freed, and the same size again: most often the same descriptor number (and address) with new contents.
  ASSERT_TRUE(freeShareable(first));
  void* second = nullptr;
  ASSERT_TRUE(allocateShareable(1 << 20, &second).isOk());
  memset(second, 0x22, 1 << 20);
  ShareableBlock again;
  ASSERT_TRUE(findShareable(second, 1 << 20, &again));
  EXPECT_NE(again.id, block.id);
  ASSERT_TRUE(peer.read(out.data(), BlockRange::of(again, second, 1 << 20), 0, out.size(), Stores::kStreaming).isOk());
  EXPECT_EQ(out[0], 0x22);
  EXPECT_TRUE(freeShareable(second));
  // Garbage peer bytes are no block range.
  std::vector<std::byte> garbage(sizeof(BlockRange), std::byte{7});
  EXPECT_FALSE(BlockRange::decode(garbage, &decoded));
}

TEST(PeerBlocks, ADescriptorThatIsNoBlockIsRefused) {
  PeerBlocks peer(1, getpid());
  BlockRange range;
  range.blockId = 999999;
  range.blockBytes = 4096;
  range.bytes = 4096;
  range.fd = STDIN_FILENO;
  std::vector<unsigned char> out(16);
  const Status st = peer.read(out.data(), range, 0, out.size(), Stores::kCached);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("rank 1's buffer"), std::string::npos) << st.message();
}

// A connection between processes: a registration names its block, or says the bytes go through the stream; once
// the buffer is freed and allocated again it is no longer current.
TEST(FifoConnectionRegistrations, NameTheBlockOrTheStreamAndGoStaleWhenTheBufferChanges) {
  constexpr size_t kCapacity = 1 << 16;
  std::shared_ptr<void> memory(Fifo::allocate(2 * Fifo::bytesFor(kCapacity)), free);
  auto* base = static_cast<std::byte*>(memory.get());
  Fifo a(base, kCapacity, true), b(base + Fifo::bytesFor(kCapacity), kCapacity, true);
  FifoConnection connection(memory, a, b, 1, getpid(), "shm", FifoConnection::Direct::kSharedBlocks);
  DirectTransfers* direct = connection.directTransfers();
  ASSERT_NE(direct, nullptr);

  std::vector<std::byte> plain(1 << 16);
  std::shared_ptr<const Registration> r;
  ASSERT_TRUE(direct->registerMemory(plain.data(), plain.size(), MemoryType::kHost, &r).isOk());
  EXPECT_TRUE(r->viaStream) << "plain memory, no cross-memory attach: through the stream";
  EXPECT_TRUE(direct->current(*r));

  void* p = nullptr;
  ASSERT_TRUE(allocateShareable(1 << 16, &p).isOk());
  ASSERT_TRUE(direct->registerMemory(p, 1 << 16, MemoryType::kHost, &r).isOk());
  EXPECT_FALSE(r->viaStream);
  BlockRange range;
  EXPECT_TRUE(BlockRange::decode(r->peerBytes, &range));
  EXPECT_TRUE(direct->current(*r));
  ASSERT_TRUE(freeShareable(p));
  EXPECT_FALSE(direct->current(*r)) << "the block is gone";
  void* q = nullptr;
  ASSERT_TRUE(allocateShareable(1 << 16, &q).isOk());
  if (q == p) {
    EXPECT_FALSE(direct->current(*r)) << "another block at the same address";
  }
  EXPECT_TRUE(freeShareable(q));
}

}  // namespace
}  // namespace chorus::transport

// Direct transfers from a peer's shareable blocks (core/shareable_memory.hpp): the sender names the block (its id,
// its descriptor number, its size) and the part of it the region covers; the receiver opens the block through
// /proc/<pid>/fd once, maps it read-only and copies from the mapping, with no system call per transfer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.hpp"
#include "core/shareable_memory.hpp"
#include "transports/memory.hpp"

namespace chorus::transport {

/// Peer bytes of a region inside a shareable block.
struct BlockRange {
  static constexpr uint64_t kMagic = 0x6b636f6c62726863;  // "chrblock"
  uint64_t magic = kMagic;
  uint64_t blockId = 0;
  uint64_t blockBytes = 0;
  uint64_t offset = 0;  // of the region in the block
  uint64_t bytes = 0;   // of the region
  int64_t fd = -1;      // the block's descriptor in the sender's process

  static BlockRange of(const ShareableBlock& block, const void* base, size_t bytes) {
    BlockRange r;
    r.blockId = block.id;
    r.blockBytes = block.bytes;
    r.offset = static_cast<uint64_t>(static_cast<const std::byte*>(base) - block.base);
    r.bytes = bytes;
    r.fd = block.fd;
    return r;
  }
  std::vector<std::byte> encode() const { return plainPeerBytes(*this); }
  /// False when `peerBytes` is not a block range.
  static bool decode(const std::vector<std::byte>& peerBytes, BlockRange* out) {
    return fromPlainPeerBytes(peerBytes, out) && out->magic == kMagic && out->offset <= out->blockBytes &&
           out->bytes <= out->blockBytes - out->offset;
  }
};

/// The receiver's mappings of one peer's blocks, kept across calls (mapping a block costs a page fault per page
/// on first use). A block the peer freed is dropped when its descriptor number comes back with another block, and
/// at most kMaxBlocks stay mapped.
class PeerBlocks {
 public:
  PeerBlocks(int peerRank, int peerPid) : peerRank_(peerRank), peerPid_(peerPid) {}
  ~PeerBlocks();
  PeerBlocks(const PeerBlocks&) = delete;
  PeerBlocks& operator=(const PeerBlocks&) = delete;

  /// Copies `bytes` at `offset` of the region `range` into `dst`.
  Status read(void* dst, const BlockRange& range, size_t offset, size_t bytes, Stores stores);
  /// The `bytes` at `offset` of the region `range`, mapped here; valid until the next call.
  Status view(const BlockRange& range, size_t offset, size_t bytes, const std::byte** out);

 private:
  static constexpr size_t kMaxBlocks = 16;
  struct Mapped {
    uint64_t id;
    int64_t fd;
    const std::byte* address;
    size_t bytes;
  };
  Status map(const BlockRange& range, const Mapped** out);
  void unmap(const Mapped& m);

  int peerRank_;
  int peerPid_;
  std::vector<Mapped> mapped_;  // most recently mapped last
};

}  // namespace chorus::transport

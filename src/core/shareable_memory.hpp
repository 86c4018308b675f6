// Host memory that the other processes of this host can map: each block is a memfd of its own, mapped shared. A
// rank that sends from such a block lets its peers read the bytes in place (the shm transport maps the block once
// per peer), so a large transfer between processes is one copy, with no staging FIFO and no system call. On host
// memory, ncclMemAlloc hands these blocks out, as NCCL's ncclMemAlloc hands out memory it can register.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chorus/shareable_memory.hpp"
#include "chorus/status.hpp"

namespace chorus {

/// One block: `fd` is this process's descriptor of its memfd, which a peer opens through /proc/<pid>/fd.
struct ShareableBlock {
  uint64_t id = 0;  // unique in this process's life, so a peer never takes a new block for a freed one
  int fd = -1;
  const std::byte* base = nullptr;
  size_t bytes = 0;
};

/// The memfd name of every block, which a peer checks before it maps one.
inline constexpr const char* kShareableName = "chorus-buffer";

// allocateShareable and freeShareable are the public API's (chorus/shareable_memory.hpp).
/// The block that holds all of [p, p + bytes); false when none does.
bool findShareable(const void* p, size_t bytes, ShareableBlock* out);

/// A reusable working area in shareable memory that only grows: the engine's staging area, from which the peers in
/// other processes read in place the bytes a rank copied there once for all of them.
class ShareableArea {
 public:
  ShareableArea() = default;
  ~ShareableArea() { release(); }
  ShareableArea(const ShareableArea&) = delete;
  ShareableArea& operator=(const ShareableArea&) = delete;
  /// At least `bytes` of it (its earlier contents are not kept when it grows).
  Status reserve(size_t bytes, std::byte** out);

 private:
  void release();
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace chorus

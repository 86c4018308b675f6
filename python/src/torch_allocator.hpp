// torch's CPU allocator, replaced on request by one whose large tensors live in chorus's shareable memory
// (chorus/shareable_memory.hpp): a collective's peers on this host then read such a tensor in place, as they read
// ncclMemAlloc's buffers, instead of through a FIFO. Smaller tensors go to the allocator it replaced.
#pragma once

#include <c10/core/Allocator.h>

#include <cstddef>

namespace chorus::torch_backend {

/// What useShareableMemory keeps of freed blocks unless told otherwise.
inline constexpr size_t kDefaultCacheBytes = size_t{256} << 20;

/// `bytes` of shareable memory for one tensor, from the same blocks and cache as the allocator's (plain memory where
/// the system refuses shareable memory): the backend's allocateTensor, which FSDP asks for its buffers.
c10::DataPtr allocateShareableData(size_t bytes);

/// Installs the allocator as torch's CPU allocator (or changes its sizes): tensors of at least `minBytes` are
/// allocated shareable; up to `cacheBytes` of freed ones are kept for the next tensors of their size, so that a
/// training loop does not create and fault in a new block for each step's tensors.
void useShareableMemory(size_t minBytes, size_t cacheBytes);
/// Puts back the allocator useShareableMemory replaced and releases the cached blocks. Tensors allocated meanwhile
/// stay valid; when torch frees them, they are cached again for allocateShareableData.
void useDefaultMemory();

struct ShareableMemoryStats {
  size_t liveBytes = 0;    // held by tensors
  size_t cachedBytes = 0;  // freed and kept for reuse
  size_t allocations = 0;  // tensors given shareable memory, counting reuses
  size_t created = 0;      // blocks created (allocations - created were served from the cache)
};
ShareableMemoryStats shareableMemoryStats();
/// Whether `p` lies in a block this allocator gave out and that is still held.
bool isShareable(const void* p);

}  // namespace chorus::torch_backend

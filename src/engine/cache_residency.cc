#include "engine/cache_residency.hpp"

#include <algorithm>

#include "core/cache_size.hpp"

namespace chorus::engine {

bool CacheResidency::touch(const void* dst, size_t footprintBytes) {
  // The same buffer as the call before: cached unless the call alone outgrows the budget.
  if (recent_[last_].dst == dst && clock_ > 0) return footprintBytes <= budget_;
  const uint64_t now = clock_;
  clock_ += footprintBytes;
  for (size_t slot = 0; slot < kRemembered; ++slot) {
    if (recent_[slot].dst != dst) continue;
    const bool cached = now - recent_[slot].at <= budget_;  // its last call and the other buffers' calls since
    recent_[slot].at = now;
    last_ = slot;
    return cached;
  }
  recent_[next_] = {dst, now};
  last_ = next_;
  next_ = (next_ + 1) % kRemembered;
  return false;
}

size_t lastLevelCacheShare(int ranksSharingIt) {
  size_t bytes = lastLevelCacheBytes();
  if (bytes == 0) bytes = kAssumedLastLevelCacheBytes;
  return bytes / static_cast<size_t>(std::max(1, ranksSharingIt));
}

}  // namespace chorus::engine

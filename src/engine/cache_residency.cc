#include "engine/cache_residency.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

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

namespace {

// The size of the highest-level cache cpu0 lists in sysfs ("32768K"), 0 when there is none.
size_t sysfsLastLevelCache() {
  size_t bytes = 0;
  int bestLevel = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    FILE* levelFile = fopen((dir + "level").c_str(), "r");
    if (!levelFile) break;
    int level = 0;
    const bool haveLevel = fscanf(levelFile, "%d", &level) == 1;
    fclose(levelFile);
    FILE* sizeFile = fopen((dir + "size").c_str(), "r");
    if (!sizeFile) continue;
    unsigned long kib = 0;
    if (haveLevel && level > bestLevel && fscanf(sizeFile, "%luK", &kib) == 1) {
      bestLevel = level;
      bytes = static_cast<size_t>(kib) << 10;
    }
    fclose(sizeFile);
  }
  return bytes;
}

}  // namespace

size_t lastLevelCacheShare(int ranksSharingIt) {
  size_t bytes = sysfsLastLevelCache();
  if (bytes == 0) {
    const long reported = sysconf(_SC_LEVEL3_CACHE_SIZE);
    bytes = reported > 0 ? static_cast<size_t>(reported) : size_t{32} << 20;
  }
  return bytes / static_cast<size_t>(std::max(1, ranksSharingIt));
}

}  // namespace chorus::engine

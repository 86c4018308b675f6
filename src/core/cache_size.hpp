// The last-level cache's size as this machine reports it, for the library (whether a buffer is likely still cached)
// and the perf tools (a cold pool larger than the cache). Header-only: the perf tools also measure other libraries
// and call nothing of chorus's.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <string>

namespace chorus {

/// The size of the highest-level cache cpu0 lists in sysfs ("32768K"): the cache a core sees. 0 when there is none.
inline size_t sysfsLastLevelCacheBytes() {
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

/// sysconf's level-3 size (from cpuid, which may give a whole package's cache). 0 when it reports none.
inline size_t sysconfLastLevelCacheBytes() {
  const long reported = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return reported > 0 ? static_cast<size_t>(reported) : 0;
}

/// The last-level cache assumed where the machine reports none.
inline constexpr size_t kAssumedLastLevelCacheBytes = size_t{32} << 20;

/// The last-level cache a core sees: sysfs's, else sysconf's. 0 when neither reports one.
inline size_t lastLevelCacheBytes() {
  const size_t sysfs = sysfsLastLevelCacheBytes();
  return sysfs > 0 ? sysfs : sysconfLastLevelCacheBytes();
}

/// A core's own cache below the shared one (sysconf's level 2, from cpuid). 0 when it reports none.
inline size_t sysconfPrivateCacheBytes() {
  const long reported = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return reported > 0 ? static_cast<size_t>(reported) : 0;
}

}  // namespace chorus

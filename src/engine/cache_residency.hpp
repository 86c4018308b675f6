// Whether the buffer a call writes is likely still in this core's cache, judged from reuse: a buffer written by a
// recent call, with fewer bytes touched by this communicator since than its share of the last-level cache, is
// taken as cached; a buffer not seen lately, or seen before more than that share went by, as cold. The engine
// writes mid-size steps into cold buffers with streaming stores, which skip reading lines the call overwrites
// anyway, and into cached ones with plain stores, which keep what the next call reads in the cache (execution.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace chorus::engine {

class CacheResidency {
 public:
  /// `budgetBytes`: the share of the last-level cache this rank may count on (lastLevelCacheShare()).
  explicit CacheResidency(size_t budgetBytes = size_t{16} << 20) : budget_(budgetBytes) {}

  /// Notes a call that writes the buffer at `dst` and touches `footprintBytes` in all (its send and receive
  /// buffers); returns whether `dst` is among the last kRemembered buffers asked about and the calls on other buffers
  /// since its last call touched at most the budget's bytes, that last call's included (a call on the same buffer
  /// as the one before: whether the call itself fits the budget).
  bool touch(const void* dst, size_t footprintBytes);

  static constexpr size_t kRemembered = 256;  // 256 buffers of 64 KiB (CHORUS_COLD_STREAMING) fill a 16 MiB share

 private:
  struct Written {
    const void* dst = nullptr;
    uint64_t at = 0;  // clock_ when the call writing it began
  };
  std::array<Written, kRemembered> recent_{};
  size_t next_ = 0;  // the slot the next new buffer takes (the oldest one)
  size_t last_ = 0;  // the slot of the last buffer asked about
  // Bytes touched by the calls noted so far, where a call on the same buffer as the one before it adds nothing: it
  // touches the same lines, so a loop on one buffer evicts no other.
  uint64_t clock_ = 0;
  size_t budget_;
};

/// The last-level cache a core of this machine sees (sysfs; sysconf's figure where sysfs has none, which may be a
/// whole package's), divided among the `ranksSharingIt` ranks of the communicator on this machine.
size_t lastLevelCacheShare(int ranksSharingIt);

}  // namespace chorus::engine

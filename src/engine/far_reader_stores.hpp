// How a sender stores a large piece into memory another core reads in place (a shared-memory FIFO). Plain stores
// leave the piece in this core's cache, where the reader's core fetches it: the fastest way while the two cores
// are close. But a plain store into a line the reader still holds (the FIFO's lines cycle between the two) must
// first take that line back from the reader's cache, one cross-core round trip per line with only a store queue's
// worth in flight; where the two cores sit far apart (another core complex or socket, or a VM's virtual CPUs that
// the host moved apart) those copies crawl. Streaming stores take no line back.
//
// On a VM whose host moves its CPUs between a close and a far placement, plain copies into the FIFO ran several times
// slower far apart than close, and streaming stores won while far and lost while close
// (perf/archive/2026-11-29-launches-that-run-3-7x-slower-the-hosts-placement-of-the-cpu.md).
//
// So: plain stores, timed; kSlowInARow plain pieces in a row slower than kFarBytesPerNs switch the next kStreamFor of
// pieces to streaming stores, after which plain pieces are timed again.
#pragma once

#include <chrono>
#include <cstddef>

namespace chorus::engine {

class FarReaderStores {
 public:
  using Clock = std::chrono::steady_clock;
  /// Pieces from this size are timed, each.
  static constexpr size_t kTimedFrom = 64 << 10;
  /// Pieces from this size up to kTimedFrom: one in kSampleEvery is timed, the others take the stores the last timed
  /// one took; smaller ones are stored plainly, untimed (the clock would cost more than it tells). Untimed, 2-rank
  /// calls with pieces of 16-64 KiB ran several times slower in the launches whose CPUs were far apart; sampled, none
  /// did, for a small price where the CPUs are close (a reader that folds from the FIFO's lines as they are rewritten
  /// sees some slow plain pieces) (perf/archive/2026-12-02-mid-size-pieces-timed-for-a-far-reader.md). Sampling from
  /// 2 KiB was tried and not kept: it won far apart and lost close by as much, and not the same way from day to day
  /// (perf/archive/2026-11-29-small-pieces-timed-for-a-far-reader-tried-not-kept.md).
  static constexpr size_t kSampledFrom = 16 << 10;
  static constexpr unsigned kSampleEvery = 4;
  /// Below this rate (bytes per ns = GB/s) a plain piece counts as slow: between the medians of launches far apart
  /// and close with sources out of the cache. Some pieces of close launches fall below it too (ranks preempted
  /// mid-copy), hence several in a row (the measurements above).
  static constexpr double kFarBytesPerNs = 7.0;
  static constexpr int kSlowInARow = 3;
  static constexpr Clock::duration kStreamFor = std::chrono::milliseconds(20);

  /// Whether the clock is read around a piece of `bytes` (see kSampledFrom).
  bool timed(size_t bytes) { return bytes >= kTimedFrom || ++sampled_ % kSampleEvery == 0; }

  /// Whether the piece about to be stored at `now` goes with streaming stores.
  bool streaming(Clock::time_point now) {
    lastStreaming_ = now < streamUntil_;
    return lastStreaming_;
  }
  /// What streaming() answered last, for a piece stored without reading the clock.
  bool lastStreaming() const { return lastStreaming_; }

  /// A plain piece of `bytes` took `took`.
  void plainPieceTook(size_t bytes, Clock::duration took, Clock::time_point now) {
    const double ns = std::chrono::duration<double, std::nano>(took).count();
    if (ns <= 0 || bytes / ns >= kFarBytesPerNs) {
      slowInARow_ = 0;
      return;
    }
    if (++slowInARow_ < kSlowInARow) return;
    slowInARow_ = 0;
    streamUntil_ = now + kStreamFor;
  }

 private:
  Clock::time_point streamUntil_{};
  int slowInARow_ = 0;
  unsigned sampled_ = 0;
  bool lastStreaming_ = false;
};

}  // namespace chorus::engine

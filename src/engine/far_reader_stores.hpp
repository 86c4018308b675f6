// How a sender stores a large piece into memory another core reads in place (a shared-memory FIFO). Plain stores
// leave the piece in this core's cache, where the reader's core fetches it: the fastest way while the two cores
// are close. But a plain store into a line the reader still holds (the FIFO's lines cycle between the two) must
// first take that line back from the reader's cache, one cross-core round trip per line with only a store queue's
// worth in flight; where the two cores sit far apart (another core complex or socket, or a VM's virtual CPUs that
// the host moved apart) those copies crawl. Streaming stores take no line back.
//
// Measured on a 2-CPU AMD EPYC VM whose host moves its CPUs
// (perf/archive/2026-11-29-launches-that-run-3-7x-slower-the-hosts-placement-of-the-cpu.md, "the host's placement of
// the CPUs"): plain copies of 256 KiB into the FIFO ran at 30-36 GB/s (median of a launch) with the cores close, 15-19
// with both on one core, 4-7 far apart; a 2-rank ReduceScatter of 512 KiB took 34 µs with plain and 49 with streaming
// stores while close, 82-90 with plain and 35-51 with streaming while far.
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
  /// AllGather and AllReduce of 32-64 KiB (blocks of 16-32 KiB, one piece each) took 3x their usual time in the
  /// launches whose CPUs were far apart (4-5 launches of 12, 2026-12-02); sampled, none did. The price where the CPUs
  /// are close: a 2-rank ReduceScatter of 32-64 KiB takes 1.1-1.15x its time (its reader folds from the FIFO's lines as
  /// they are rewritten: a tenth of its plain pieces run below 8 GB/s, and slow runs of them switch to streaming now
  /// and then; timing every piece cost the same, so not the clock); AlltoAll took 0.92-0.98x.
  /// Sampling from 2 KiB was tried and not kept: far launches of 2-rank calls of 4-16 KiB took 0.20-0.50x their time,
  /// close ones 0.96-1.03x one day and 1.25-1.8x at 4-8 KiB the next
  /// (perf/archive/2026-11-29-small-pieces-timed-for-a-far-reader-tried-not-kept.md, "Small pieces timed for a far
  /// reader: tried, not kept").
  static constexpr size_t kSampledFrom = 16 << 10;
  static constexpr unsigned kSampleEvery = 4;
  /// Below this rate (bytes per ns = GB/s) a plain piece counts as slow. Medians of a launch's pieces: 4.4-6.7 far
  /// apart; 11-14 close with sources out of the cache, 30-36 in it. A tenth of the pieces of close launches fall
  /// below 8 (10% of a 4-rank launch's on 2 cores below 4.5: ranks preempted mid-copy), hence several in a row.
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

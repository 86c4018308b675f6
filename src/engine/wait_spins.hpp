// How many times a waiting rank polls before it starts to yield its core (engine::run): by whether its machine runs
// more ranks than cores, and by the size of the call.
#pragma once

#include <cstdint>

namespace chorus::engine {

struct WaitSpins {
  int64_t configured = 0;       // CHORUS_SPIN; 0: the rule below
  bool oversubscribed = false;  // this machine runs more ranks of the communicator than it has cores

  // Calls below this many payload bytes are small.
  static constexpr uint64_t kSmallCall = 32 << 10;

  /// The spin of a call of `payloadBytes` (its operations' payloads summed). With a core for every rank, a waiting
  /// rank spins long: its peer is running. With more ranks than cores, a spinning rank takes the time slice of the
  /// rank it waits for, so it yields almost at once; a small call's wait is that rank's turn, and it yields after one
  /// poll. One poll against 16 won on most calls below 32 KiB at 3, 4 and 8 ranks on 2 cores and lost from 32 KiB,
  /// so larger calls keep 16 (perf/archive/2026-11-30-oversubscribed-ranks-one-poll-before-yielding-in-small-calls.md).
  int64_t forCall(uint64_t payloadBytes) const {
    if (configured > 0) return configured;
    if (!oversubscribed) return 20000;
    return payloadBytes < kSmallCall ? 1 : 16;
  }
};

}  // namespace chorus::engine

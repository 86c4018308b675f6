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
  /// poll. Measured on the 2-core VM (`<coll>_perf -b 8 -e 16K -n 500 -w 50`, 8-16 interleaved launches each, the
  /// five collectives), one poll against 16: 3 ranks 0.60-0.95x the time but Broadcast at 8 KiB (1.11x), 4 ranks
  /// 0.68-0.99x but AllReduce at 4-8 KiB (1.04-1.11x) and ReduceScatter (0.95-1.20x), 8 ranks 0.58-0.93x but
  /// Broadcast from 512 B (0.79-1.10x). From 32 KiB one poll lost AllReduce and Broadcast (4 ranks, 32-256 KiB:
  /// 1.03-1.37x; AllReduce of 256 KiB-1 MiB 1.23-1.44x), so larger calls keep 16.
  int64_t forCall(uint64_t payloadBytes) const {
    if (configured > 0) return configured;
    if (!oversubscribed) return 20000;
    return payloadBytes < kSmallCall ? 1 : 16;
  }
};

}  // namespace chorus::engine

// How many times a waiting rank polls before it starts to yield its core (engine::run): by whether its machine runs
// more ranks than cores, and by the size of the call.
#pragma once

#include <cstdint>

#include "engine/tuning.hpp"

namespace chorus::engine {

struct WaitSpins {
  int64_t configured = 0;       // CHORUS_SPIN; 0: the rule below
  bool oversubscribed = false;  // this machine runs more ranks of the communicator than it has cores

  /// The spin of a call of `payloadBytes` (its operations' payloads summed). With a core for every rank, a waiting
  /// rank spins long: its peer is running. With more ranks than cores, a small call's wait is the peer's turn on the
  /// core, and the rank yields almost at once (the figures and their measurement: engine/tuning.hpp).
  int64_t forCall(uint64_t payloadBytes) const {
    if (configured > 0) return configured;
    if (!oversubscribed) return kDefaultSpins;
    return payloadBytes < kSmallCallBytes ? kSmallCallSpins : kOversubscribedSpins;
  }
};

}  // namespace chorus::engine

// The engine's settings: how a waiting rank spins, when stores stream past the cache, whether calls carry headers.
// A communicator's own values reach an Execution through ExecutionSettings::values.
#pragma once

#include <cstdint>

#include "core/settings.hpp"

namespace chorus::engine {

extern const Setting<int64_t> kSpin;             // CHORUS_SPIN (0: auto)
extern const Setting<bool> kFarStreaming;        // CHORUS_FAR_STREAMING
extern const Setting<int64_t> kColdStreaming;    // CHORUS_COLD_STREAMING (0: off)
extern const Setting<int64_t> kCachedStreaming;  // CHORUS_CACHED_STREAMING
extern const Setting<bool> kCheckCalls;          // CHORUS_CHECK_CALLS

}  // namespace chorus::engine

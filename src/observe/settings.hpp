// The settings of what chorus records and watches: the flight recorder, where its dumps go, the heartbeat.
#pragma once

#include <cstdint>
#include <string>

#include "core/settings.hpp"

namespace chorus::observe {

extern const Setting<int64_t> kTraceEntries;     // CHORUS_TRACE_ENTRIES (0: no flight recorder)
extern const Setting<std::string> kTraceDir;     // CHORUS_TRACE_DIR
extern const Setting<double> kHeartbeatPeriod;   // CHORUS_HEARTBEAT_PERIOD (0: no heartbeat)
extern const Setting<double> kHeartbeatTimeout;  // CHORUS_HEARTBEAT_TIMEOUT (0: 4 periods)

}  // namespace chorus::observe

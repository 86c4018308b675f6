#include "observe/settings.hpp"

#include "core/setting_parsers.hpp"

namespace chorus::observe {

using namespace setting_parsers;

// 88 bytes an entry, per communicator.
const Setting<int64_t> kTraceEntries{
    {"CHORUS_TRACE_ENTRIES", "", "2000",
     "operations each communicator's flight recorder keeps (at most 1048576, 88 bytes each; 0: none, and with it the "
     "clock reads and the metrics' times); chorus-trace reads their dumps"},
    "an integer from 0 to 1048576",
    SettingScope::kCommunicator,
    byteCount(0, 1 << 20)};
// Process-wide: SIGUSR1's handler, installed once, dumps every communicator there.
const Setting<std::string> kTraceDir{
    {"CHORUS_TRACE_DIR", "", "",
     "where flight records are written on a timeout, a failure, an abort and SIGUSR1 (one file per communicator and "
     "rank); unset: only on request (Communicator::dumpFlightRecord)"},
    kAnyText,
    SettingScope::kProcess,
    text()};
const Setting<double> kHeartbeatPeriod{
    {"CHORUS_HEARTBEAT_PERIOD", "", "0",
     "seconds between a rank's heartbeats through the rendezvous store (0: no heartbeat detector; per communicator "
     "also CommConfig::heartbeatSeconds)"},
    "0 or a positive number of seconds (e.g. 5 or 0.5)",
    SettingScope::kCommunicator,
    seconds("0")};
const Setting<double> kHeartbeatTimeout{
    {"CHORUS_HEARTBEAT_TIMEOUT", "", "auto",
     "seconds without a heartbeat after which a rank is reported dead, stopped or cut off (auto: 4 periods)"},
    "auto or a positive number of seconds (e.g. 20 or 0.5)",
    SettingScope::kCommunicator,
    seconds("auto")};

}  // namespace chorus::observe

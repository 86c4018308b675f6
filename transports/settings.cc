#include "transports/settings.hpp"

#include "core/setting_parsers.hpp"

namespace chorus::transport {

using namespace setting_parsers;

// Checked against the registered transports when a communicator connects (transports/peer_mesh.cc).
const Setting<std::string> kTransport{
    {"CHORUS_TRANSPORT", "", "",
     "force one transport for every peer (loopback, shm, tcp, and ucx, ib where built; chorus-info lists them); an "
     "unknown name is an error listing them, a forced one that cannot reach a peer says why"},
    kAnyText,
    SettingScope::kCommunicator,
    lowerText()};
const Setting<int64_t> kDirectThreshold{
    {"CHORUS_DIRECT_THRESHOLD", "", "",
     "transfers of this many bytes per step are copied once, straight from the sender's buffer; 0 = off (unset: each "
     "transport's own, 256 KiB; transfers a plan staged for several peers from 32 KiB)"},
    kNonNegative,
    SettingScope::kCommunicator,
    byteCount(0, INT64_MAX, {"", -1})};
const Setting<int64_t> kLoopbackBuffer{{"CHORUS_LOOPBACK_BUFFER", "", "4194304", "bytes of each in-process FIFO"},
                                       kPositive,
                                       SettingScope::kCommunicator,
                                       byteCount(1)};

}  // namespace chorus::transport

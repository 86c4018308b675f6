#include "transports/tcp/settings.hpp"

#include "core/setting_parsers.hpp"

namespace chorus::transport {

using namespace setting_parsers;

const Setting<int64_t> kTcpBuffer{
    {"CHORUS_TCP_BUFFER", "", "4194304", "bytes of each tcp staging FIFO (one per direction per peer)"},
    kPositive,
    SettingScope::kCommunicator,
    byteCount(1)};
const Setting<int64_t> kTcpSockets{
    {"CHORUS_TCP_SOCKETS", "", "2",
     "stream sockets per tcp peer (the stream is striped across them); one more carries direct transfers"},
    kPositive,
    SettingScope::kCommunicator,
    byteCount(1)};
const Setting<std::string> kTcpCongestion{
    {"CHORUS_TCP_CONGESTION", "", "auto",
     "congestion control of tcp data sockets (e.g. cubic, bbr; system: leave the default); auto: reno between ranks "
     "of one host, where the path is the loopback device and pacing only delays, the system default elsewhere"},
    kAnyText,
    SettingScope::kCommunicator,
    text()};

}  // namespace chorus::transport

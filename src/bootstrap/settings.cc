#include "bootstrap/settings.hpp"

#include "core/setting_parsers.hpp"

namespace chorus::bootstrap {

using namespace setting_parsers;

const Setting<std::string> kCommId{
    {"CHORUS_COMM_ID", "NCCL_COMM_ID", "", "host:port of the rendezvous root for the environment launchers"},
    kAnyText,
    SettingScope::kProcess,
    text()};
const Setting<std::string> kCommSecret{
    {"CHORUS_COMM_SECRET", "", "",
     "a per-job secret (any text, the same on every rank) for rendezvous by address (CHORUS_COMM_ID, torchrun's "
     "MASTER_ADDR): without it the address alone admits anyone who can reach it"},
    kAnyText,
    SettingScope::kProcess,
    text()};
const Setting<std::string> kHostId{
    {"CHORUS_HOST_ID", "NCCL_HOSTID", "", "host identity override (default hostname + boot id)"},
    kAnyText,
    SettingScope::kProcess,
    text()};
const Setting<std::string> kTlsPskFile{
    {"CHORUS_TLS_PSK_FILE", "", "",
     "a file holding a pre-shared key (at least 32 bytes, the same on every rank): the rendezvous and the tcp "
     "transport then speak TLS 1.3 with it (as ncclSetEncryption does); unreadable or short, connections fail"},
    kAnyText,
    SettingScope::kProcess,
    text()};
const Setting<std::string> kSocketAddr{
    {"CHORUS_SOCKET_ADDR", "", "", "IPv4 address to listen on and advertise (default: first non-loopback)"},
    kAnyText,
    SettingScope::kProcess,
    text()};

}  // namespace chorus::bootstrap

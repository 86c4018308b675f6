// The bootstrap's settings: where ranks meet and who they are (process-wide: read before any communicator exists).
#pragma once

#include <string>

#include "core/settings.hpp"

namespace chorus::bootstrap {

extern const Setting<std::string> kCommId;      // CHORUS_COMM_ID / NCCL_COMM_ID
extern const Setting<std::string> kCommSecret;  // CHORUS_COMM_SECRET
extern const Setting<std::string> kHostId;      // CHORUS_HOST_ID / NCCL_HOSTID
extern const Setting<std::string> kSocketAddr;  // CHORUS_SOCKET_ADDR
extern const Setting<std::string> kTlsPskFile;  // CHORUS_TLS_PSK_FILE

}  // namespace chorus::bootstrap

// The tcp transport's settings (ucx sizes its FIFOs by CHORUS_TCP_BUFFER too).
#pragma once

#include <cstdint>
#include <string>

#include "core/settings.hpp"

namespace chorus::transport {

extern const Setting<int64_t> kTcpBuffer;          // CHORUS_TCP_BUFFER
extern const Setting<int64_t> kTcpSockets;         // CHORUS_TCP_SOCKETS
extern const Setting<std::string> kTcpCongestion;  // CHORUS_TCP_CONGESTION

}  // namespace chorus::transport

// The settings every transport reads: which transport, direct transfers, the in-process FIFO. A communicator's own
// values reach a transport through ConnectContext::settings.
#pragma once

#include <cstdint>
#include <string>

#include "core/settings.hpp"

namespace chorus::transport {

extern const Setting<std::string> kTransport;    // CHORUS_TRANSPORT (lower case)
extern const Setting<int64_t> kDirectThreshold;  // CHORUS_DIRECT_THRESHOLD (0: off; -1: each transport's own)
extern const Setting<int64_t> kLoopbackBuffer;   // CHORUS_LOOPBACK_BUFFER

/// Whether connections may offer direct transfers at all (CHORUS_DIRECT_THRESHOLD is not 0).
inline bool directTransfersOn(const Settings& s) { return s[kDirectThreshold] != 0; }

}  // namespace chorus::transport

// Connection setup for one communicator. Each rank opens every registered transport that can run here and
// publishes who it is with their addresses; then, for each peer, it takes the transport CHORUS_TRANSPORT forces or
// else the most preferred one that reaches the peer, and each transport connects its peers, all ranks walking the
// transports in the same order.
#pragma once

#include <memory>
#include <vector>

#include "chorus/status.hpp"
#include "transports/transport.hpp"

namespace chorus::transport {

struct PeerMesh {
  std::vector<PeerInfo> peers;                           // by rank, as each published itself
  std::vector<std::unique_ptr<Connection>> connections;  // by rank; this rank's own is one FIFO to itself
};

/// Connects rank `rank` of `nranks` to all others through `bootstrap`, with `settings` (the transport forced, and
/// each transport's own knobs).
Status connectPeerMesh(bootstrap::Bootstrap& bootstrap, int rank, int nranks, const Settings& settings, PeerMesh* out);

}  // namespace chorus::transport

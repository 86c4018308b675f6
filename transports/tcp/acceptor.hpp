// The accepting side of tcp setup: a rank waits for the sockets its higher-ranked peers dial. Handshakes are read
// side by side, each bounded by a second, so a connection that never says hello (a port scanner, a stray client)
// costs a second of one descriptor instead of the setup; running out of descriptors backs off instead of spinning;
// and a failure of another rank's setup ends the wait with that rank's cause.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "chorus/status.hpp"
#include "core/deadline.hpp"

namespace chorus::transport::tcp {

/// The first bytes of every tcp socket of a connection, from the dialing rank.
struct Hello {
  uint64_t magic;
  uint64_t commHash;
  int32_t rank;
  int32_t socketIndex;
};
inline constexpr uint64_t kHelloMagic = 0x63686f7275735443ull;  // "chorusTC"

struct Expected {
  uint64_t commHash = 0;
  int rank = 0;            // the accepting rank
  std::vector<int> peers;  // the ranks that dial it
  int socketsPerPeer = 0;
};

/// Accepts until `(*fds)[i][k]` holds socket k of peers[i] for every peer. `setupFailed` is asked every few hundred
/// milliseconds; a non-ok answer ends the wait with it. On error, the sockets accepted so far stay in `fds`.
Status acceptPeers(int listenFd, const Expected& expected, const Deadline& deadline,
                   const std::function<Status()>& setupFailed, std::vector<std::vector<int>>* fds);

}  // namespace chorus::transport::tcp

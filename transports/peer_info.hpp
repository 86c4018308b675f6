// What each rank publishes about itself at init (PeerInfo), as text in the bootstrap store: one field a line, then
// one line per transport address, "name=hex bytes". The reader
// trusts nothing: a malformed or foreign entry is an error naming the field, never an exception or a wrong peer.
#pragma once

#include <string>

#include "chorus/status.hpp"
#include "transports/transport.hpp"

namespace chorus::transport {

std::string encodePeerInfo(const PeerInfo& p);
/// Parses the entry published under rank `rank`'s name; it must say that it is rank `rank`.
Status decodePeerInfo(const std::string& blob, int rank, PeerInfo* out);

}  // namespace chorus::transport

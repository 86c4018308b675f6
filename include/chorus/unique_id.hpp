/// @file unique_id.hpp
/// UniqueId: the 128-byte token every rank of a new communicator receives. It carries the address of the
/// rendezvous root and a random secret that peers must present.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "chorus/status.hpp"

namespace chorus {

/// The token: made once (create(), fromAddress()), sent to every rank by any means, passed to Communicator::create.
struct UniqueId {
  std::array<char, 128> bytes{};  ///< opaque; the same layout as ncclUniqueId

  /// Creates an id and starts the rendezvous root in this process, which must stay alive until all ranks joined.
  static Status create(UniqueId* out);
  /// An id for an explicit root address "host:port" (CHORUS_COMM_ID); rank 0 starts the root on that port.
  static Status fromAddress(const std::string& hostPort, UniqueId* out);

  /// "ip:port" of the root, for messages.
  std::string rootAddress() const;
};

}  // namespace chorus

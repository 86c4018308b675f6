// The parameter server's messages. Each is a fixed header, then (for pushes, answers and forwards) the chunk's
// floats as a second message of the size the layout gives. A link carries one direction between two ranks, so the
// messages of a link arrive in the order they were sent.
#pragma once

#include <cstdint>

#include "chorus/communicator.hpp"

namespace chorus::training::param_server {

enum class Kind : int64_t {
  kPush = 1,  // worker -> server: a chunk's gradient (times 1/W) of the worker's step `clock`
  kDone,      // worker -> server, or primary -> backup: no more messages
  kParams,    // server -> worker: the chunk's parameters after the push; `aux`: the slowest worker's clock
  kError,     // server -> worker: the push failed; `aux`: the ErrorCode, `worker`: the failed worker or -1
  kForward,   // primary -> backup: an update to apply to the replica (`worker`: whose push, -1 for a bsp round)
  kAck,       // backup -> primary: the forward was applied
};

struct Header {
  Kind kind = Kind::kDone;
  int64_t range = 0, chunk = 0, clock = 0, worker = -1, aux = 0;
};

inline Status sendHeader(Communicator& link, const Header& h, int peer) {
  return link.send(&h, sizeof h, DataType::kUint8, peer);
}
inline Status recvHeader(Communicator& link, Header* h, int peer) {
  return link.recv(h, sizeof *h, DataType::kUint8, peer);
}

}  // namespace chorus::training::param_server

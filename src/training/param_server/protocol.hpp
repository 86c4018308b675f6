// The parameter server's messages. Between a worker and a server every message has one size: a header, then room
// for one chunk of floats. A receiver can then post its next receives before the sender's headers say what comes,
// so a link's handshakes overlap the transfers before them (one message per chunk, never waiting on a reply that
// queues behind the other direction's data). A link carries one direction between two ranks, so its messages arrive
// in the order they were sent.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

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

/// Receives a server keeps posted ahead of a worker's pushes. A worker ends with this many kDone messages, one for
/// each of them.
constexpr int kPostedAhead = 4;

/// A header and room for one chunk, sent and received whole.
class Message {
 public:
  static constexpr size_t kHeaderFloats = (sizeof(Header) + sizeof(float) - 1) / sizeof(float);
  explicit Message(size_t chunkElements = 0) : data_(kHeaderFloats + chunkElements) {}

  Header header() const {
    Header h;
    std::memcpy(static_cast<void*>(&h), data_.data(), sizeof h);  // Header is trivially copyable
    return h;
  }
  void setHeader(const Header& h) { std::memcpy(data_.data(), &h, sizeof h); }
  float* payload() { return data_.data() + kHeaderFloats; }
  const float* payload() const { return data_.data() + kHeaderFloats; }

  Request sendAsync(Communicator& link, int peer) const {
    return link.sendAsync(data_.data(), data_.size(), DataType::kFloat32, peer);
  }
  Request recvAsync(Communicator& link, int peer) {
    return link.recvAsync(data_.data(), data_.size(), DataType::kFloat32, peer);
  }

 private:
  std::vector<float> data_;
};

inline Status sendHeader(Communicator& link, const Header& h, int peer) {
  return link.send(&h, sizeof h, DataType::kUint8, peer);
}
inline Status recvHeader(Communicator& link, Header* h, int peer) {
  return link.recv(h, sizeof *h, DataType::kUint8, peer);
}

}  // namespace chorus::training::param_server

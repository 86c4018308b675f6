// The byte streams of a connection that stages both directions in FIFOs of its own memory (tcp, ucx, ib): the engine
// writes into the outgoing FIFO and reads from the incoming one, and the transport moves bytes between them and its
// wire, following the running totals.
#pragma once

#include "transports/fifo.hpp"
#include "transports/transport.hpp"

namespace chorus::transport {

class StagedStreams : public Connection {
 public:
  std::span<std::byte> sendSpace() final { return out_.writable(); }
  void commitSend(size_t bytes) final {
    out_.produce(bytes);
    produced_ += bytes;
  }
  std::span<const std::byte> recvData() final { return in_.readable(); }
  void consumeRecv(size_t bytes) final {
    in_.consume(bytes);
    consumed_ += bytes;
  }
  size_t bufferBytes() const final { return out_.capacity() + in_.capacity(); }

 protected:
  /// The two FIFOs of `capacity` bytes each, outgoing then incoming, at the start of `memory`
  /// (2 * Fifo::bytesFor(capacity) bytes).
  void placeStreams(void* memory, size_t capacity) {
    out_ = Fifo(memory, capacity, true);
    in_ = Fifo(static_cast<std::byte*>(memory) + Fifo::bytesFor(capacity), capacity, true);
  }

  Fifo out_, in_;
  uint64_t produced_ = 0;  // bytes the engine committed to the outgoing stream, in all
  uint64_t consumed_ = 0;  // bytes the engine took from the incoming stream, in all
};

}  // namespace chorus::transport

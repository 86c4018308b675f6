// A Connection made of two FIFOs in memory both sides can reach: in-process (loopback) or shared memory (shm).
#pragma once

#include <signal.h>

#include <memory>
#include <string>

#include "transports/fifo.hpp"
#include "transports/transport.hpp"

namespace chorus::transport {

class FifoConnection final : public Connection {
 public:
  /// `owner` keeps the memory of both FIFOs alive. `peerPid` > 0 enables the process-liveness check.
  FifoConnection(std::shared_ptr<void> owner, Fifo out, Fifo in, int peerRank, int peerPid, const char* name)
      : owner_(std::move(owner)), out_(out), in_(in), peerRank_(peerRank), peerPid_(peerPid), name_(name) {}
  // Destruction does not close(): bytes already committed stay readable for the peer (the memory is shared).
  ~FifoConnection() override = default;

  std::span<std::byte> sendSpace() override { return out_.writable(); }
  void commitSend(size_t bytes) override { out_.produce(bytes); }
  std::span<const std::byte> recvData() override { return in_.readable(); }
  void consumeRecv(size_t bytes) override { in_.consume(bytes); }

  Status progress() override {
    if ((in_.closed() || out_.closed()) && in_.readable().empty()) {
      return remoteError("rank " + std::to_string(peerRank_) + " closed its " + name_ + " connection");
    }
    return Status::ok();
  }

  Status checkPeer() override {
    if (peerPid_ > 0 && kill(peerPid_, 0) != 0 && errno == ESRCH) {
      return remoteError("rank " + std::to_string(peerRank_) + " (pid " + std::to_string(peerPid_) + ") is gone");
    }
    return progress();
  }

  void close() override {
    if (!closed_) {
      out_.close();
      in_.close();
      closed_ = true;
    }
  }

  const char* transportName() const override { return name_; }

 private:
  std::shared_ptr<void> owner_;
  Fifo out_;
  Fifo in_;
  int peerRank_;
  int peerPid_;
  const char* name_;
  bool closed_ = false;
};

}  // namespace chorus::transport

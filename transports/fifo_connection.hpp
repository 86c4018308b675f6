// A Connection made of two FIFOs in memory both sides can reach: in-process (loopback) or shared memory (shm).
#pragma once

#include <signal.h>

#include <fstream>
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

  Status progress(bool*) override { return Status::ok(); }
  bool peerClosed() override { return in_.closed() || out_.closed(); }
  Status checkPeer() override {
    if (peerPid_ > 0 && !processAlive(peerPid_)) {
      return remoteError("rank " + std::to_string(peerRank_) + " (pid " + std::to_string(peerPid_) + ") is gone");
    }
    return Status::ok();
  }

  /// False once `pid` has exited, including while it is a zombie its parent has not reaped yet.
  static bool processAlive(int pid) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;  // no procfs: trust kill()
    size_t close = line.rfind(')');
    return close == std::string::npos || close + 2 >= line.size() || (line[close + 2] != 'Z' && line[close + 2] != 'X');
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

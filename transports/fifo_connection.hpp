// A Connection made of two FIFOs in memory both sides can reach: in-process (loopback) or shared memory (shm).
#pragma once

#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "core/shareable_memory.hpp"
#include "transports/fifo.hpp"
#include "transports/fifo_lap.hpp"
#include "transports/peer_blocks.hpp"
#include "transports/transport.hpp"

namespace chorus::transport {

class FifoConnection final : public Connection, public SmallMessages, public DirectTransfers {
 public:
  /// How the receiver reaches the sender's buffers for direct transfers: in the same process by address; between
  /// processes, shareable blocks (core/shareable_memory.hpp) by mapping them, other memory by cross-memory attach
  /// where that works and is allowed, else through the stream.
  enum class Direct { kNone, kSameProcess, kSharedBlocks, kSharedBlocksAndCrossMemoryAttach };

  /// `owner` keeps the memory of both FIFOs alive. `peerPid` > 0 enables the process-liveness check. `laps`: how far
  /// into the outgoing FIFO this side goes before it starts over at the front when the FIFO is empty (fifoLaps()).
  FifoConnection(std::shared_ptr<void> owner, Fifo out, Fifo in, int peerRank, int peerPid, const char* name,
                 Direct direct = Direct::kNone, FifoLaps laps = {})
      : owner_(std::move(owner)),
        out_(out),
        in_(in),
        peerRank_(peerRank),
        peerPid_(peerPid),
        name_(name),
        direct_(direct),
        peerBlocks_(peerRank, peerPid),
        laps_(laps),
        lapPeers_(laps.peersOnMachine) {
    out_.wrapEarly(laps.initial());  // the peer reads through readable()/consume(), so it follows the early wraps
  }
  // Destruction does not close(): bytes already committed stay readable for the peer (the memory is shared).
  ~FifoConnection() override = default;

  std::span<std::byte> sendSpace() override { return out_.writable(); }
  bool peerReadsSendSpace() const override { return true; }
  void writesToPeers(int peers) override {
    if (peers == lapPeers_) return;
    lapPeers_ = peers;
    out_.wrapEarly(laps_.forPeers(peers));
  }
  void commitSend(size_t bytes) override { out_.produce(bytes); }
  size_t bufferBytes() const override { return out_.capacity() + in_.capacity(); }
  std::span<const std::byte> recvData() override { return in_.readable(); }
  void consumeRecv(size_t bytes) override { in_.consume(bytes); }

  Status progress(bool*) override { return Status::ok(); }

  SmallMessages* smallMessages() override { return this; }
  size_t limit() override { return Fifo::kSmallMessage; }
  size_t firstPart() override { return Line::kPayload; }
  bool send(const void* head, size_t headBytes, const void* src, size_t bytes) override {
    return out_.sendLines(head, headBytes, src, bytes);
  }
  bool recv(void* dst, size_t bytes) override { return in_.recvLines(dst, bytes); }
  bool peek(void* dst, size_t bytes) override { return in_.peekLine(dst, bytes); }
  bool waiting() override { return in_.linesWaiting(); }

  // A region is an address range (same process, CMA) or a part of a shareable block: registering pins and maps
  // nothing here; the receiver maps a block the first time it reads from it.
  DirectTransfers* directTransfers() override { return direct_ == Direct::kNone ? nullptr : this; }
  Status registerMemory(const void* base, size_t bytes, MemoryType type,
                        std::shared_ptr<const Registration>* out) override {
    CHORUS_TRY(addressRangeRegistration(name_, base, bytes, type, out));
    if (direct_ == Direct::kSameProcess) return Status::ok();
    auto r = std::make_shared<Registration>(**out);
    ShareableBlock block;
    if (findShareable(base, bytes, &block)) {
      r->peerBytes = BlockRange::of(block, base, bytes).encode();
    } else if (direct_ != Direct::kSharedBlocksAndCrossMemoryAttach) {
      r->viaStream = true;
    }
    *out = std::move(r);
    return Status::ok();
  }
  // Between processes a registration names a block, or none: still right while the same block (or still no block)
  // holds the range. A freed block's memory stays mapped at its peers, so a stale one would read old bytes.
  bool current(const Registration& r) override {
    if (direct_ == Direct::kSameProcess) return true;
    ShareableBlock block;
    BlockRange range;
    const bool shareable = findShareable(r.base, r.bytes, &block);
    if (BlockRange::decode(r.peerBytes, &range)) return shareable && block.id == range.blockId;
    return !shareable;
  }
  uint64_t post(const Registration&, size_t, size_t bytes) override { return directPosted_ += bytes; }
  uint64_t acked() override { return out_.directAcked(); }
  // Memory is always there to read: every call moves all `bytes`.
  Status read(void* dst, RemoteRegion& region, size_t offset, size_t bytes, Stores stores, size_t* moved) override {
    const std::byte* reachable = nullptr;
    CHORUS_TRY(view(region, offset, bytes, &reachable));
    if (reachable) {
      copyWith(stores, dst, reachable, bytes);
    } else {
      CHORUS_TRY(readAcrossProcesses(dst, region, offset, bytes));
    }
    in_.ackDirect(bytes);
    *moved += bytes;
    return Status::ok();
  }
  // The bytes this process reaches by address: a peer's shareable block, mapped here, or a rank of this process's
  // buffer itself. Other regions are read by cross-memory attach (read()).
  Status view(RemoteRegion& region, size_t offset, size_t bytes, const std::byte** out) override {
    *out = nullptr;
    if (BlockRange block; direct_ != Direct::kSameProcess && BlockRange::decode(region.peerBytes, &block))
      return peerBlocks_.view(block, offset, bytes, out);
    if (direct_ != Direct::kSameProcess) return Status::ok();
    AddressRange range;
    if (!AddressRange::decode(region.peerBytes, &range) || !range.holds(offset, bytes))
      return unregistered(offset, bytes);
    *out = reinterpret_cast<const std::byte*>(range.base + offset);
    return Status::ok();
  }
  void viewed(size_t bytes) override { in_.ackDirect(bytes); }
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

  bool sendDrained() override { return true; }
  bool addPollFds(std::vector<pollfd>*) override { return false; }
  const char* transportName() const override { return name_; }

 private:
  Status unregistered(size_t offset, size_t bytes) const {
    return internalError("rank " + std::to_string(peerRank_) + " named " + std::to_string(bytes) + " bytes at offset " +
                         std::to_string(offset) + " of a region it did not register");
  }
  // Cross-memory attach: one copy from the peer process, by the kernel (process_vm_readv).
  Status readAcrossProcesses(void* dst, const RemoteRegion& region, size_t offset, size_t bytes) const {
    AddressRange range;
    if (direct_ != Direct::kSharedBlocksAndCrossMemoryAttach || !AddressRange::decode(region.peerBytes, &range) ||
        !range.holds(offset, bytes))
      return unregistered(offset, bytes);
    const uint64_t address = range.base + offset;
    size_t done = 0;
    while (done < bytes) {
      iovec local{static_cast<char*>(dst) + done, bytes - done};
      iovec remote{reinterpret_cast<void*>(address + done), bytes - done};
      ssize_t n = process_vm_readv(peerPid_, &local, 1, &remote, 1, 0);
      if (n <= 0) {
        return remoteError("reading " + std::to_string(bytes) + " bytes from rank " + std::to_string(peerRank_) +
                           " (pid " + std::to_string(peerPid_) + "): " + strerror(errno));
      }
      done += static_cast<size_t>(n);
    }
    return Status::ok();
  }

  std::shared_ptr<void> owner_;
  Fifo out_;
  Fifo in_;
  int peerRank_;
  int peerPid_;
  const char* name_;
  Direct direct_;
  PeerBlocks peerBlocks_;
  FifoLaps laps_;
  int lapPeers_;  // the peers the outgoing FIFO's lap is sized for
  uint64_t directPosted_ = 0;
  bool closed_ = false;
};

}  // namespace chorus::transport

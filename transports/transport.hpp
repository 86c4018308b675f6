// The one interface every transport implements. A Connection is a pair of ordered byte streams with one peer:
// the engine writes into sendSpace()/commitSend() and reads from recvData()/consumeRecv(). Streams carry no
// message boundaries: both sides run the same plan, so they agree on every length.
#pragma once

#include <poll.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chorus/status.hpp"

namespace chorus {
struct Settings;
}
namespace chorus::bootstrap {
class Bootstrap;
}

namespace chorus::transport {

class Connection {
 public:
  virtual ~Connection() = default;

  /// Contiguous space where the next outgoing bytes go; empty when the stream is full.
  virtual std::span<std::byte> sendSpace() = 0;
  virtual void commitSend(size_t bytes) = 0;
  /// Contiguous incoming bytes not yet consumed; empty when nothing arrived.
  virtual std::span<const std::byte> recvData() = 0;
  virtual void consumeRecv(size_t bytes) = 0;

  /// Moves bytes where the transport needs a push (tcp) and reports a closed peer. Called in every poll round;
  /// sets *moved when bytes moved (the engine must then look at the streams again before it sleeps).
  virtual Status progress(bool* moved) = 0;
  /// A slower check that the peer is still alive; called when a wait has made no progress for a while.
  virtual Status checkPeer() = 0;
  /// Direct transfers, for large messages: the sender writes only {address, length} into the stream and the bytes
  /// travel outside it, from the sender's buffer straight into the receiver's (shm and loopback: the receiver
  /// copies them from the sender's memory; tcp: they go on a socket of their own, with no staging copy on either
  /// side). Off unless the transport says so.
  virtual bool directCapable() { return false; }
  /// Receiver: moves up to `bytes` of the transfer whose source is the peer's `address` into `dst`, without
  /// waiting; adds the bytes moved to *done. Called again with the rest until all arrived.
  virtual Status readDirect(void* dst, uint64_t address, size_t bytes, size_t* done) {
    return internalError("direct transfers are not supported by this connection");
  }
  /// Sender: posts `bytes` at `src` and returns the running total that directAcked() must reach before `src` may
  /// change.
  virtual uint64_t postDirect(const void* src, size_t bytes) { return 0; }
  /// Sender: bytes the sender may consider delivered so far (read by the peer, or handed to the kernel).
  virtual uint64_t directAcked() { return 0; }

  /// Small messages (1..smallMessageLimit() bytes, whole): a channel beside the stream where each cache line carries
  /// its own arrival flag. Both sides route a step here by the same rule (its size and this capability), so each
  /// channel stays in order. A limit of 0 means no such channel.
  virtual size_t smallMessageLimit() { return 0; }
  virtual bool sendSmall(const void* src, size_t bytes) { return false; }
  /// One small message made of `head` then `src` (a call header and the first step's bytes), without assembling it
  /// first.
  virtual bool sendSmall2(const void* head, size_t headBytes, const void* src, size_t bytes) { return false; }
  virtual bool recvSmall(void* dst, size_t bytes) { return false; }
  /// Copies the first `bytes` (at most one line's payload, 56) of the next small message without taking it; false
  /// until its first line has arrived.
  virtual bool peekSmall(void* dst, size_t bytes) { return false; }
  /// Bytes at the start of a small message that arrive together (one line): a receiver that expects no more never
  /// waits for a part that a shorter message would not have.
  virtual size_t smallMessageFirstPart() { return 0; }
  /// True when incoming bytes wait on any channel.
  virtual bool hasIncoming() { return !recvData().empty(); }

  /// True once the peer closed its end. Bytes that already arrived stay readable; it is an error only for a
  /// side that still waits for more.
  virtual bool peerClosed() { return false; }
  /// Tells the peer this side is going away (communicator abort or destroy).
  virtual void close() = 0;

  virtual const char* transportName() const = 0;
  /// True when all committed outgoing bytes have left this process (tcp staging drained).
  virtual bool sendDrained() { return true; }
  /// Sockets a waiting rank can sleep on (poll) instead of spinning; false when the transport has none (memory
  /// FIFOs), and then waiters must poll by yielding.
  virtual bool addPollFds(std::vector<struct pollfd>*) { return false; }
};

/// What a rank publishes about itself at init.
struct PeerInfo {
  int rank = -1;
  std::string hostId;     // hostname + boot id, or CHORUS_HOST_ID
  std::string machineId;  // hostname + boot id: the machine whose cores the rank shares
  int pid = 0;
  uint64_t processToken = 0;                     // distinguishes processes (and process lifetimes) across hosts
  std::map<std::string, std::string> addresses;  // transport name -> the address it opened (a tcp listener's ip:port)

  /// The address `transport` published, or null when this rank published none.
  const std::string* address(const std::string& transport) const {
    auto it = addresses.find(transport);
    return it == addresses.end() ? nullptr : &it->second;
  }
};

struct ConnectContext {
  int rank = 0;
  int nranks = 0;
  uint64_t commHash = 0;
  bootstrap::Bootstrap* bootstrap = nullptr;
  const std::vector<PeerInfo>* peers = nullptr;
  const Settings* settings = nullptr;  // the communicator's: each transport reads its own knobs here
};

/// One rank's side of a transport for one communicator: made by the transport's registered `open`, it connects that
/// rank to the peers the mesh gives it.
class Transport {
 public:
  virtual ~Transport() = default;
  /// Connects to every rank in `peers`; the peer sets are symmetric across ranks. out[i] pairs with peers[i].
  virtual Status connect(const ConnectContext& ctx, const std::vector<int>& peers,
                         std::vector<std::unique_ptr<Connection>>* out) = 0;
};

/// Each rank's FIFOs share a memory budget, so FIFOs shrink as the communicator grows: `configured` bytes per
/// direction at most, 64 KiB at least, whole pages.
inline size_t fifoBytesFor(int64_t configured, int nranks) {
  constexpr size_t kBudget = 64 << 20, kMin = 64 << 10;
  const size_t perPeer = nranks > 1 ? kBudget / static_cast<size_t>(nranks - 1) : kBudget;
  const size_t bytes = std::max(std::min(static_cast<size_t>(std::max<int64_t>(configured, 0)), perPeer), kMin);
  return bytes & ~static_cast<size_t>(4095);
}

}  // namespace chorus::transport

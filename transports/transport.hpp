// The one interface every transport implements. A Connection is a pair of ordered byte streams with one peer:
// the engine writes into sendSpace()/commitSend() and reads from recvData()/consumeRecv(). Streams carry no
// message boundaries: both sides run the same plan, so they agree on every length. Beside that core a connection
// may offer capabilities (small messages, direct transfers from registered memory) that the engine uses when
// present.
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
#include "transports/memory.hpp"

namespace chorus {
struct Settings;
}
namespace chorus::bootstrap {
class Bootstrap;
}

namespace chorus::transport {

/// The most a sender commits to a stream at once (the engine's pieces, engine/pieces.hpp); a transport may size
/// its buffers' reuse by it (transports/fifo_lap.hpp).
inline constexpr size_t kLargestPiece = 256 << 10;

/// Optional capability: small messages (1..limit() bytes, whole) on a channel beside the stream, where each cache
/// line carries its own arrival flag. Both sides route a step here by the same rule (its size and this
/// capability), so each channel stays in order.
class SmallMessages {
 public:
  virtual ~SmallMessages() = default;
  virtual size_t limit() = 0;
  /// Bytes at the start of a message that arrive together (one line): a receiver that expects no more never waits
  /// for a part that a shorter message would not have.
  virtual size_t firstPart() = 0;
  /// Sends one message made of `head` then `src` (a call header and the first step's bytes; headBytes may be 0),
  /// without assembling it first. False when the channel is full.
  virtual bool send(const void* head, size_t headBytes, const void* src, size_t bytes) = 0;
  /// Takes the next message of `bytes` bytes once all of it arrived.
  virtual bool recv(void* dst, size_t bytes) = 0;
  /// Copies the first `bytes` (at most firstPart()) of the next message without taking it; false until its first
  /// part has arrived.
  virtual bool peek(void* dst, size_t bytes) = 0;
  /// True when a message waits.
  virtual bool waiting() = 0;
};

/// Optional capability: direct transfers, for large messages. The sender registers the memory it sends from and
/// writes only {region, offset, length} into the stream; the bytes travel outside it, from the sender's buffer
/// straight into the receiver's (shm and loopback: the receiver copies them out of the sender's memory; tcp: they
/// go on a socket of their own, with no staging copy on either side).
class DirectTransfers {
 public:
  virtual ~DirectTransfers() = default;
  /// Registers `bytes` at `base` for this connection's peer to take bytes from. Transports that pin or map memory
  /// keep registrations in a RegistrationCache, so a buffer used again is not registered again.
  virtual Status registerMemory(const void* base, size_t bytes, MemoryType type,
                                std::shared_ptr<const Registration>* out) = 0;
  /// Whether a registration made for an earlier call still describes the memory at its address (a repeated call
  /// keeps its registrations; the buffer may have been freed and allocated again in between).
  virtual bool current(const Registration&) { return true; }
  /// Sender: posts `bytes` at `offset` of `region` and returns the running total that acked() must reach before
  /// those bytes may change.
  virtual uint64_t post(const Registration& region, size_t offset, size_t bytes) = 0;
  /// Sender: bytes the sender may consider delivered so far (read by the peer, or handed to the kernel).
  virtual uint64_t acked() = 0;
  /// Receiver: moves up to `bytes` at `offset` of the peer's `region` into `dst` without waiting, and adds the
  /// bytes moved to *done. Called again with the rest until all arrived. An offset outside the region is an error.
  /// `stores` is a hint for transports whose CPU copies the bytes.
  virtual Status read(void* dst, RemoteRegion& region, size_t offset, size_t bytes, Stores stores, size_t* done) = 0;
  /// Receiver, where the peer's memory is mapped here (shm's shareable blocks): sets *out to the `bytes` at `offset`
  /// of `region`, to be read in place until the next call on this connection, and viewed() tells the sender once
  /// they were read. *out stays null where the bytes must be copied by read().
  virtual Status view(RemoteRegion&, size_t, size_t, const std::byte** out) {
    *out = nullptr;
    return Status::ok();
  }
  virtual void viewed(size_t) {}
  /// Bytes per step from which a direct transfer beats the byte stream on this connection (both sides must answer
  /// alike); CHORUS_DIRECT_THRESHOLD overrides it for every connection.
  virtual size_t threshold() const { return size_t{256} << 10; }
};

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
  /// True once the peer closed its end. Bytes that already arrived stay readable; it is an error only for a
  /// side that still waits for more.
  virtual bool peerClosed() = 0;
  /// Tells the peer this side is going away (communicator abort or destroy).
  virtual void close() = 0;
  /// True when all committed outgoing bytes (and posted direct transfers) have left this process.
  virtual bool sendDrained() = 0;
  /// Sockets a waiting rank can sleep on (poll) instead of spinning; false when the transport has none (memory
  /// FIFOs), and then waiters must poll by yielding.
  virtual bool addPollFds(std::vector<struct pollfd>*) = 0;
  virtual const char* transportName() const = 0;
  /// True when another core reads the send space in place (shared-memory FIFOs): how the sender stores a piece
  /// there decides whose cache it ends in (engine/far_reader_stores.hpp).
  virtual bool peerReadsSendSpace() const { return false; }
  /// How many peers this rank's calls now write to (the engine says so when a call's plan is bound): a transport
  /// whose buffers share the cache with the other ranks' can size them by it (transports/fifo_lap.hpp).
  virtual void writesToPeers(int) {}

  /// The bytes of memory this side holds for the connection (its FIFOs, both directions), for ncclCommMemStats.
  virtual size_t bufferBytes() const { return 0; }

  /// The capabilities this connection offers; null when it has none.
  virtual SmallMessages* smallMessages() { return nullptr; }
  virtual DirectTransfers* directTransfers() { return nullptr; }
};

/// What a rank publishes about itself at init.
struct PeerInfo {
  int rank = -1;
  std::string hostId;     // hostname + boot id, or CHORUS_HOST_ID
  std::string machineId;  // hostname + boot id: the machine whose cores the rank shares
  int pid = 0;
  uint64_t processToken = 0;                     // distinguishes processes (and process lifetimes) across hosts
  std::vector<int> cpus;                         // the CPUs the rank may run on (allowedCpus), increasing
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

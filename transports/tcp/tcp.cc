// tcp: any two ranks that can reach each other over IPv4. Each peer pair uses S sockets (CHORUS_TCP_SOCKETS). The
// byte stream is cut into blocks of kBlock bytes and block b travels on socket b % S, so a large transfer keeps
// all sockets busy while every socket still carries an ordered sub-stream. The engine reads and writes local
// staging FIFOs; progress() moves bytes between them and the non-blocking sockets. One more socket carries direct
// transfers (large messages) straight between the callers' buffers.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/socket.hpp"
#include "bootstrap/tls.hpp"
#include "core/log.hpp"
#include "transports/fifo.hpp"
#include "transports/registry.hpp"
#include "transports/settings.hpp"
#include "transports/staged_streams.hpp"
#include "transports/tcp/acceptor.hpp"
#include "transports/tcp/settings.hpp"

namespace chorus::transport {
namespace {

constexpr uint64_t kBlock = 128 << 10;

class TcpConnection final : public StagedStreams, public DirectTransfers {
 public:
  /// The last of `fds` carries direct transfers; the others the striped stream.
  TcpConnection(std::vector<int> fds, size_t fifoBytes, int peerRank, bool direct)
      : fds_(std::move(fds)),
        peerRank_(peerRank),
        memory_(Fifo::allocate(2 * Fifo::bytesFor(fifoBytes))),
        direct_(direct) {
    bulkFd_ = fds_.back();
    fds_.pop_back();
    net::setNonBlocking(bulkFd_);
    placeStreams(memory_, fifoBytes);
    for (size_t k = 0; k < fds_.size(); ++k) {
      net::setNonBlocking(fds_[k]);
      sendCursor_.push_back(k * kBlock);
      eof_.push_back(false);
      recvCursor_.push_back(k * kBlock);
    }
  }
  ~TcpConnection() override {
    for (int& fd : fds_) net::closeFd(fd);
    net::closeFd(bulkFd_);
    free(memory_);
  }

  Status progress(bool* moved) override {
    Status pushed = pushOut(moved);
    if (pushed.isOk()) pushed = pushDirect(moved);
    // One poll() tells which sockets have bytes: a waiting rank then makes one system call per round instead of a
    // failing recv() per socket, which on few cores took time and socket locks from the peer's transfer.
    pollFds_.clear();
    for (int fd : fds_) pollFds_.push_back({fd, POLLIN | POLLRDHUP, 0});
    pollFds_.push_back({bulkFd_, POLLIN, 0});
    if (poll(pollFds_.data(), pollFds_.size(), 0) < 0 && errno != EINTR)
      return pushed.isOk() ? fail("poll", -1) : pushed;
    bulkReadable_ = bulkReadable_ || pollFds_.back().revents != 0 || net::tls::buffered(bulkFd_);
    // When the peer went away, what it sent before is still read: it may say why (a mismatched call's header).
    Status pulled = pullIn(moved);
    return pushed.isOk() ? pulled : pushed;
  }

  // Direct transfers travel on their own socket, in the order of their descriptors in the stream: the sender's
  // kernel copies them from the caller's buffer, the receiver's kernel into the caller's buffer. No staging copy.
  DirectTransfers* directTransfers() override { return direct_ ? this : nullptr; }
  // The kernel copies straight from the caller's buffer: nothing to register, and the peer needs no bytes of it.
  Status registerMemory(const void* base, size_t bytes, MemoryType type,
                        std::shared_ptr<const Registration>* out) override {
    if (type != MemoryType::kHost) return invalidUsage(std::string("tcp sends host memory only, not device memory"));
    auto r = std::make_shared<Registration>();
    r->base = static_cast<const std::byte*>(base);
    r->bytes = bytes;
    r->type = type;
    *out = std::move(r);
    return Status::ok();
  }
  uint64_t post(const Registration& region, size_t offset, size_t bytes) override {
    directQueue_.push_back({region.base + offset, bytes, 0});
    return directPosted_ += bytes;
  }
  uint64_t acked() override { return directSent_; }
  Status read(void* dst, RemoteRegion&, size_t, size_t bytes, Stores, size_t* done) override {
    auto* to = static_cast<std::byte*>(dst);
    size_t got = 0;
    while (got < bytes && bulkReadable_) {
      ssize_t n = net::tls::recv(bulkFd_, to + got, bytes - got);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        bulkReadable_ = false;
        break;
      }
      if (n <= 0) return fail("recv", n);
      got += static_cast<size_t>(n);
    }
    *done += got;
    return Status::ok();
  }
  // Closed once every socket reached end-of-file: bytes still in flight on another socket are not lost. The
  // direct socket is only read by a direct receive, so its end is looked for (without taking bytes) once the
  // stream ended: a peer that sent its last direct transfer and left has not closed what is still to be read.
  bool peerClosed() override {
    if (!std::all_of(eof_.begin(), eof_.end(), [](bool e) { return e; })) return false;
    if (!bulkEof_) {
      char byte;
      ssize_t n = recv(bulkFd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      bulkEof_ = (n == 0 && !net::tls::buffered(bulkFd_)) ||
                 (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
    return bulkEof_;
  }
  Status checkPeer() override {
    bool ignored = false;
    return progress(&ignored);
  }
  void close() override {
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    shutdown(bulkFd_, SHUT_RDWR);
  }
  const char* transportName() const override { return "tcp"; }
  bool sendDrained() override { return minimum(sendCursor_) >= produced_ && directQueue_.empty(); }
  bool addPollFds(std::vector<pollfd>* fds) override {
    // Bytes a TLS session holds wake no poll(): a waiter with such bytes yields instead of sleeping.
    if (net::tls::buffered(bulkFd_)) return false;
    for (int fd : fds_)
      if (net::tls::buffered(fd)) return false;
    const short events = static_cast<short>(POLLIN | (minimum(sendCursor_) >= produced_ ? 0 : POLLOUT));
    for (int fd : fds_) fds->push_back({fd, events, 0});
    fds->push_back({bulkFd_, static_cast<short>(POLLIN | (directQueue_.empty() ? 0 : POLLOUT)), 0});
    return true;
  }

 private:
  static uint64_t minimum(const std::vector<uint64_t>& v) {
    uint64_t m = v[0];
    for (uint64_t x : v) m = x < m ? x : m;
    return m;
  }
  // Moves a socket's cursor to the start of its next block when it reached the end of the current one.
  void advance(uint64_t& cursor) const {
    if (cursor % kBlock == 0 && cursor != 0 && fds_.size() > 1) {
      // cursor sits at the end of a block it owned; its next block is S-1 blocks further.
      cursor += (fds_.size() - 1) * kBlock;
    }
  }

  Status fail(const char* what, ssize_t n) {
    if (n == 0) return remoteError("rank " + std::to_string(peerRank_) + " closed the tcp connection");
    const bool receiving = std::string(what) == "recv";
    return remoteError(std::string(what) + (receiving ? " from rank " : " to rank ") + std::to_string(peerRank_) +
                       ": " + strerror(errno));
  }

  Status pushOut(bool* moved) {
    const uint64_t capacity = out_.capacity();
    const std::byte* base = out_.data();
    for (size_t k = 0; k < fds_.size(); ++k) {
      uint64_t& c = sendCursor_[k];
      while (c < produced_) {
        uint64_t blockEnd = (c / kBlock + 1) * kBlock;
        uint64_t end = std::min({produced_, blockEnd, c - c % capacity + capacity});
        ssize_t n = net::tls::send(fds_[k], base + c % capacity, end - c);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
        if (n <= 0) return fail("send", n);
        *moved = true;
        c += static_cast<uint64_t>(n);
        if (c == blockEnd) advance(c);
      }
    }
    // Everything below the lowest cursor is in the kernel's hands: free it in the staging FIFO.
    uint64_t sent = std::min(minimum(sendCursor_), produced_);
    if (sent > freed_) {
      out_.release(sent - freed_);
      freed_ = sent;
    }
    return Status::ok();
  }

  Status pushDirect(bool* moved) {
    while (!directQueue_.empty()) {
      DirectSend& d = directQueue_.front();
      ssize_t n = net::tls::send(bulkFd_, d.src + d.sent, d.bytes - d.sent);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
      if (n <= 0) return fail("send", n);
      *moved = true;
      d.sent += static_cast<size_t>(n);
      directSent_ += static_cast<uint64_t>(n);
      if (d.sent == d.bytes) directQueue_.pop_front();
    }
    return Status::ok();
  }

  Status pullIn(bool* moved) {
    const uint64_t capacity = in_.capacity();
    std::byte* base = in_.data();
    const uint64_t limit = consumed_ + capacity;  // cannot write past what the consumer freed
    for (size_t k = 0; k < fds_.size(); ++k) {
      uint64_t& c = recvCursor_[k];
      if (pollFds_[k].revents == 0 && !net::tls::buffered(fds_[k])) continue;
      if (c >= limit && !eof_[k] && (pollFds_[k].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
        // No room for this socket's next block (a FIFO smaller than the stripes ahead of it), but the peer has
        // gone: its end counts once nothing it sent is left unread.
        char byte;
        const ssize_t n = recv(fds_[k], &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 && !net::tls::buffered(fds_[k])) eof_[k] = true;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return fail("recv", n);
        continue;
      }
      while (c < limit && !eof_[k]) {
        uint64_t blockEnd = (c / kBlock + 1) * kBlock;
        uint64_t end = std::min({limit, blockEnd, c - c % capacity + capacity});
        ssize_t n = net::tls::recv(fds_[k], base + c % capacity, end - c);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
        if (n == 0) {
          eof_[k] = true;
          break;
        }
        if (n < 0) return fail("recv", n);
        *moved = true;
        c += static_cast<uint64_t>(n);
        if (c == blockEnd) advance(c);
      }
    }
    // Bytes are readable up to the lowest cursor: everything below it has arrived on every socket.
    uint64_t arrived = minimum(recvCursor_);
    in_.publish(arrived);  // never less than before: every cursor only moves forward
    return Status::ok();
  }

  std::vector<int> fds_;
  int peerRank_;
  void* memory_;
  std::vector<uint64_t> sendCursor_, recvCursor_;
  uint64_t freed_ = 0;
  std::vector<bool> eof_;
  struct DirectSend {
    const std::byte* src;
    size_t bytes, sent;
  };
  int bulkFd_ = -1;
  bool bulkEof_ = false;         // the peer closed the direct socket, and nothing is left to read on it
  bool bulkReadable_ = false;    // the last poll() saw bytes (or an end) on bulkFd_ that recv() has not drained yet
  std::vector<pollfd> pollFds_;  // the stream sockets, then bulkFd_
  bool direct_;
  std::deque<DirectSend> directQueue_;
  uint64_t directPosted_ = 0, directSent_ = 0;
};

// CHORUS_TCP_CONGESTION. Between two ranks of one host the path is the loopback device: no loss, no queue to
// probe, and a pacing algorithm (bbr, a common default) only spaces out the segments of a large transfer, which
// measured a quarter slower than reno there (2 ranks, AllReduce of 4 and 16 MiB).
Status chooseCongestionControl(int fd, const std::string& wanted) {
  if (wanted == "system" || wanted.empty()) return Status::ok();
  if (wanted != "auto") return net::setCongestionControl(fd, wanted);
  if (!net::isLocalPath(fd)) return Status::ok();
  Status st = net::setCongestionControl(fd, "reno");
  if (!st.isOk()) CHORUS_WARN(kTransport, "%s; the system default stays", st.message().c_str());
  return Status::ok();
}

class TcpTransportImpl final : public Transport {
 public:
  ~TcpTransportImpl() override { net::closeFd(listenFd_); }

  Status open(std::string* address) {
    net::Endpoint bound;
    CHORUS_TRY(net::listenOn(net::localAddress(), 0, &listenFd_, &bound));
    *address = bound.toString();
    return Status::ok();
  }

  Status connect(const ConnectContext& ctx, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>* out) override {
    const Settings& cfg = *ctx.settings;
    // The striped stream's sockets, and one more for direct transfers.
    const int sockets = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(cfg[kTcpSockets], 16))) + 1;
    Deadline deadline = Deadline::after(cfg[kTimeout]);
    CHORUS_TRY(net::reserveDescriptors(
        peers.size() * sockets,
        "tcp setup (" + std::to_string(peers.size()) + " peers x " + std::to_string(sockets) + " sockets)"));
    std::vector<std::vector<int>> fds(peers.size(), std::vector<int>(sockets, -1));
    auto cleanup = [&] {
      for (auto& v : fds)
        for (int& fd : v) net::closeFd(fd);
    };
    // Higher ranks dial lower ranks; dialing needs no accept on the other side, so there is no ordering deadlock.
    tcp::Expected expected{ctx.commHash, ctx.rank, {}, sockets};
    for (size_t i = 0; i < peers.size(); ++i) {
      if (peers[i] > ctx.rank) {
        expected.peers.push_back(peers[i]);
        continue;
      }
      net::Endpoint to;
      const std::string* address = (*ctx.peers)[peers[i]].address("tcp");
      Status st = address ? net::Endpoint::parse(*address, &to)
                          : invalidUsage("rank " + std::to_string(peers[i]) + " published no tcp address");
      for (int k = 0; k < sockets && st.isOk(); ++k) {
        // The peer's listener was open before it published its address: a refusal means it is gone.
        st = net::connectTo(to, deadline, &fds[i][k], false);
        tcp::Hello hello{tcp::kHelloMagic, ctx.commHash, ctx.rank, k};
        if (st.isOk()) st = net::sendAll(fds[i][k], &hello, sizeof(hello), deadline);
      }
      if (!st.isOk()) {
        cleanup();
        if (Status cause = ctx.bootstrap->setupStatus(); !cause.isOk()) return cause;
        return st.withContext("tcp connect to rank " + std::to_string(peers[i]) +
                              " (its listener is gone when refused: the process ended or left its init)");
      }
    }
    // Accepted sockets go to the peer's row of fds.
    std::vector<std::vector<int>> accepted(expected.peers.size(), std::vector<int>(sockets, -1));
    Status st = tcp::acceptPeers(
        listenFd_, expected, deadline, [&] { return ctx.bootstrap->setupStatus(); }, &accepted);
    for (size_t j = 0, i = 0; i < peers.size(); ++i)
      if (peers[i] > ctx.rank) fds[i] = accepted[j++];
    if (!st.isOk()) {
      cleanup();
      return st;
    }
    for (auto& pair : fds) {
      for (int fd : pair) {
        Status st = chooseCongestionControl(fd, cfg[kTcpCongestion]);
        if (!st.isOk()) {
          cleanup();
          return st;
        }
      }
    }
    out->clear();
    for (size_t i = 0; i < peers.size(); ++i) {
      out->push_back(std::make_unique<TcpConnection>(fds[i], fifoBytesFor(cfg[kTcpBuffer], ctx.nranks), peers[i],
                                                     directTransfersOn(cfg)));
      for (int& fd : fds[i]) fd = -1;  // now owned by the connection
    }
    CHORUS_INFO(kTransport, "tcp: connected to %zu peers, %d sockets each (one for direct transfers)%s", peers.size(),
                sockets, net::tls::enabled() ? ", TLS 1.3" : "");
    return Status::ok();
  }

 private:
  int listenFd_ = -1;
};

}  // namespace

CHORUS_REGISTER_TRANSPORT(
    tcp, {.name = "tcp",
          .preference = 4,
          .description = "any two hosts: striped sockets (CHORUS_TCP_SOCKETS) and one socket for direct transfers",
          .open =
              [](const Settings&, std::unique_ptr<Transport>* out, std::string* address) {
                auto t = std::make_unique<TcpTransportImpl>();
                CHORUS_TRY(t->open(address));
                *out = std::move(t);
                return Status::ok();
              },
          .reaches =
              [](const PeerInfo&, const PeerInfo& peer, std::string* why) {
                const std::string* address = peer.address("tcp");
                *why = address ? "listens on " + *address : "published no tcp address";
                return address != nullptr;
              }});

}  // namespace chorus::transport

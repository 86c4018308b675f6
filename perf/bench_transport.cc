// Google Benchmark of one transport hop: two ranks (threads of this process) connected by the real shm or tcp
// transport, exactly as a communicator connects them. The benchmark thread is rank 0; rank 1 runs a responder.
//   hopRoundTrip/<transport>/<bytes>: rank 0 sends a message, rank 1 sends it back (one hop = half the time).
//   hopBandwidth/<transport>/<bytes>: rank 0 streams a message, rank 1 consumes it and returns one byte.
// Every message starts with an 8-byte header (payload length and mode) so the responder knows what to do.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "core/settings.hpp"
#include "transports/peer_mesh.hpp"
#include "transports/settings.hpp"

namespace {

using chorus::Status;
using chorus::transport::Connection;

constexpr size_t kPiece = 256 << 10;  // bytes per commit, so the receiver copies while the sender does
constexpr auto kDeadline = std::chrono::seconds(30);
constexpr uint64_t kEcho = 0, kSink = 1, kStop = 2;

[[noreturn]] void fail(const std::string& what) {
  fprintf(stderr, "bench_transport: %s\n", what.c_str());
  std::exit(1);
}

void check(const Status& st, const char* what) {
  if (!st.isOk()) fail(std::string(what) + ": " + st.message());
}

// Moves `bytes` from `src` (nullptr: zeros) into the stream, driving progress until they are all committed.
void sendAll(Connection& c, const std::byte* src, size_t bytes) {
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  bool moved = false;
  while (bytes > 0) {
    auto space = c.sendSpace();
    size_t n = std::min({space.size(), bytes, kPiece});
    if (n > 0) {
      if (src) {
        memcpy(space.data(), src, n);
        src += n;
      }
      c.commitSend(n);
      bytes -= n;
    }
    check(c.progress(&moved), "progress");
    if (n == 0 && std::chrono::steady_clock::now() > deadline) fail("send timed out");
  }
  while (!c.sendDrained()) check(c.progress(&moved), "progress");
}

// Takes `bytes` out of the stream into `dst` (nullptr: discards them).
void recvAll(Connection& c, std::byte* dst, size_t bytes) {
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  bool moved = false;
  while (bytes > 0) {
    auto data = c.recvData();
    size_t n = std::min(data.size(), bytes);
    if (n > 0) {
      if (dst) {
        memcpy(dst, data.data(), n);
        dst += n;
      }
      c.consumeRecv(n);
      bytes -= n;
    } else {
      check(c.progress(&moved), "progress");
      if (c.peerClosed()) fail("peer closed the connection");
      if (std::chrono::steady_clock::now() > deadline) fail("receive timed out");
    }
  }
}

void sendMessage(Connection& c, uint64_t mode, const std::vector<std::byte>& payload) {
  const uint64_t header = (payload.size() << 2) | mode;
  // A small message goes out in one write with its header, as a collective's small message would.
  constexpr size_t kCombined = 4096;
  if (payload.size() <= kCombined) {
    std::byte message[8 + kCombined];
    memcpy(message, &header, 8);
    if (!payload.empty()) memcpy(message + 8, payload.data(), payload.size());
    sendAll(c, message, 8 + payload.size());
  } else {
    sendAll(c, reinterpret_cast<const std::byte*>(&header), 8);
    sendAll(c, payload.data(), payload.size());
  }
}

// Rank 1: answers messages until told to stop.
void respond(Connection* c) {
  std::vector<std::byte> buffer;
  for (;;) {
    uint64_t header = 0;
    recvAll(*c, reinterpret_cast<std::byte*>(&header), 8);
    const uint64_t mode = header & 3, bytes = header >> 2;
    if (mode == kStop) return;
    buffer.resize(bytes);
    recvAll(*c, buffer.data(), bytes);
    if (mode == kEcho) {
      sendMessage(*c, kEcho, buffer);
    } else {
      const std::byte done{1};
      sendAll(*c, &done, 1);
    }
  }
}

// Two ranks joined through a real bootstrap and connected by `transport`; rank 1 responds in its own thread.
class Hop {
 public:
  explicit Hop(const std::string& transport) {
    chorus::UniqueId id;
    check(chorus::UniqueId::create(&id), "unique id");
    std::vector<std::unique_ptr<Connection>> conns(2);
    std::vector<std::thread> ranks;
    for (int rank = 0; rank < 2; ++rank) {
      ranks.emplace_back([&, rank] { conns[rank] = connect(transport, id, rank); });
    }
    for (auto& t : ranks) t.join();
    mine_ = std::move(conns[0]);
    peer_ = std::move(conns[1]);
    responder_ = std::thread(respond, peer_.get());
  }
  ~Hop() {
    sendMessage(*mine_, kStop, {});
    responder_.join();
  }
  Connection& connection() { return *mine_; }

 private:
  static std::unique_ptr<Connection> connect(const std::string& transport, const chorus::UniqueId& id, int rank) {
    std::unique_ptr<chorus::bootstrap::Bootstrap> bs;
    check(chorus::bootstrap::Bootstrap::join(id, 2, rank, &bs), "bootstrap");
    chorus::Settings forced = chorus::settings();
    forced.set(chorus::transport::kTransport, transport);
    forced.set(chorus::transport::kDirectThreshold, int64_t{0});  // the stream alone
    chorus::transport::PeerMesh mesh;
    check(chorus::transport::connectPeerMesh(*bs, rank, 2, forced, &mesh), "connect");
    check(bs->barrier("connected"), "barrier");
    return std::move(mesh.connections[1 - rank]);
  }

  std::unique_ptr<Connection> mine_, peer_;
  std::thread responder_;
};

void hopRoundTrip(benchmark::State& state, const char* transport) {
  Hop hop(transport);  // per run: an idle responder must not spin while another transport is measured
  Connection& c = hop.connection();
  std::vector<std::byte> payload(static_cast<size_t>(state.range(0)), std::byte{7});
  std::vector<std::byte> back(8 + payload.size());
  for (auto _ : state) {
    sendMessage(c, kEcho, payload);
    recvAll(c, back.data(), back.size());
  }
}

void hopBandwidth(benchmark::State& state, const char* transport) {
  Hop hop(transport);  // per run: an idle responder must not spin while another transport is measured
  Connection& c = hop.connection();
  std::vector<std::byte> payload(static_cast<size_t>(state.range(0)), std::byte{7});
  std::byte done{};
  for (auto _ : state) {
    sendMessage(c, kSink, payload);
    recvAll(c, &done, 1);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

BENCHMARK_CAPTURE(hopRoundTrip, shm, "shm")->UseRealTime()->Arg(8)->Arg(1 << 10)->Arg(64 << 10);
BENCHMARK_CAPTURE(hopRoundTrip, tcp, "tcp")->UseRealTime()->Arg(8)->Arg(1 << 10)->Arg(64 << 10);
BENCHMARK_CAPTURE(hopBandwidth, shm, "shm")->UseRealTime()->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK_CAPTURE(hopBandwidth, tcp, "tcp")->UseRealTime()->Arg(1 << 20)->Arg(64 << 20);

}  // namespace

BENCHMARK_MAIN();

#include "comm/one_sided.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <string>

#include "bootstrap/bootstrap.hpp"
#include "core/deadline.hpp"
#include "core/log.hpp"
#include "transports/peer_mesh.hpp"

namespace chorus {

namespace {

constexpr uint32_t kPutMagic = 0x70757473;  // "puts": a stream out of step shows as another value
// After this many rounds without progress the thread sleeps on work_: briefly while calls are recent (a reply is
// often close behind), long after a quiet spell, so an idle communicator costs no core.
constexpr int kSpinRounds = 2000;
constexpr auto kShortSleep = std::chrono::microseconds(50);
constexpr auto kLongSleep = std::chrono::milliseconds(1);
constexpr auto kQuietSpell = std::chrono::milliseconds(20);
constexpr auto kLivenessPeriod = std::chrono::milliseconds(100);

std::string describe(const SignalWait& w) {
  return std::to_string(w.count) + " signal(s) from rank " + std::to_string(w.peer) + " at index " +
         std::to_string(w.index) + " of context " + std::to_string(w.context);
}

// A peer's failure names it: the transports' own errors do, chorus's here get "rank N: " in front.
Status namingPeer(int peer, const Status& cause) {
  const std::string name = "rank " + std::to_string(peer);
  if (cause.message().find(name) != std::string::npos) return cause;
  return Status(cause.code(), name + ": " + cause.message());
}

}  // namespace

// What precedes each put's bytes on the stream.
struct OneSided::Header {
  uint32_t magic = kPutMagic;
  int32_t index = 0;
  int32_t context = 0;
  uint32_t reserved = 0;
  uint64_t window = kNoWindow;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// A put its caller waits on: the thread copies the header and then the data into the stream.
struct OneSided::Outgoing {
  Header header;
  const std::byte* data = nullptr;
  size_t sent = 0;       // of sizeof(Header) + header.bytes, written by the thread
  bool started = false;  // the thread took it (under mutex_): only it may end it now
  bool done = false;
  Status result;
};

// The put arriving from a peer, as far as it arrived (the progress thread's alone).
struct OneSided::Incoming {
  Header header;
  size_t headerBytes = 0;
  std::byte* target = nullptr;  // in this rank's window; null: the bytes are dropped (an invalid put)
  size_t received = 0;
  bool waitingForWindow = false;  // its window is not registered here yet
  std::chrono::steady_clock::time_point waitingSince;
};

struct OneSided::Peer {
  std::deque<Outgoing*> outgoing;  // under mutex_
  Status failure;                  // under mutex_: set once, then every put to it and wait on it fails
  Incoming incoming;
};

Status OneSided::connect(bootstrap::Bootstrap& parent, int rank, int nranks, const Settings& settings, int contexts,
                         const std::atomic<double>* timeoutSeconds, const std::atomic<bool>* aborted,
                         std::unique_ptr<OneSided>* out) {
  std::unique_ptr<bootstrap::Bootstrap> own = parent.child("one-sided", nranks, rank);
  transport::PeerMesh mesh;
  CHORUS_TRY(transport::connectPeerMesh(*own, rank, nranks, settings, &mesh));
  *out = std::make_unique<OneSided>(rank, nranks, contexts, timeoutSeconds, std::move(mesh.connections), std::move(own),
                                    aborted);
  return Status::ok();
}

OneSided::OneSided(int rank, int nranks, int contexts, const std::atomic<double>* timeoutSeconds,
                   std::vector<std::unique_ptr<transport::Connection>> connections,
                   std::unique_ptr<bootstrap::Bootstrap> bootstrap, const std::atomic<bool>* aborted)
    : rank_(rank),
      nranks_(nranks),
      contexts_(contexts),
      timeoutSeconds_(timeoutSeconds),
      connections_(std::move(connections)),
      bootstrap_(std::move(bootstrap)),
      aborted_(aborted) {
  for (int r = 0; r < nranks_; ++r) peers_.push_back(std::make_unique<Peer>());
  thread_ = std::thread([this] { progressLoop(); });
}

OneSided::~OneSided() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  changed_.notify_all();
  thread_.join();
  for (auto& c : connections_) {
    if (c) c->close();
  }
}

void OneSided::abort() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int r = 0; r < nranks_; ++r) {
      if (peers_[r]->failure.isOk()) peers_[r]->failure = remoteError("the communicator was aborted");
    }
  }
  work_.notify_all();
  changed_.notify_all();
}

size_t OneSided::bufferBytes() const {
  size_t bytes = 0;
  for (const auto& c : connections_)
    if (c) bytes += c->bufferBytes();
  return bytes;
}

void OneSided::addWindow(uint64_t id, void* base, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  windows_[id] = {static_cast<std::byte*>(base), bytes};
  windowsAdded_ = std::max(windowsAdded_, id + 1);
}

void OneSided::removeWindow(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  windows_.erase(id);
}

Status OneSided::peerError(int peer) const { return peers_[peer]->failure; }

void OneSided::fail(int peer, const Status& cause, bool warn) {
  std::lock_guard<std::mutex> lock(mutex_);
  Peer& p = *peers_[peer];
  if (!p.failure.isOk()) return;
  p.failure = namingPeer(peer, cause);
  if (warn) {
    CHORUS_WARN(kColl, "one-sided channel: %s", p.failure.message().c_str());
  } else {
    CHORUS_INFO(kColl, "one-sided channel: %s", p.failure.message().c_str());
  }
  changed_.notify_all();
}

Status OneSided::putToSelf(uint64_t window, uint64_t offset, const void* data, size_t bytes, int index, int context) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > 0) {
    auto it = windows_.find(window);
    if (it == windows_.end() || offset > it->second.size() || bytes > it->second.size() - offset) {
      return invalidArgument("a put of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                             " does not fit this rank's window");
    }
    std::memcpy(it->second.data() + offset, data, bytes);
  }
  ++arrived_[{rank_, context, index}];
  changed_.notify_all();
  return Status::ok();
}

Status OneSided::put(int peer, uint64_t window, uint64_t offset, const void* data, size_t bytes, int index,
                     int context) {
  if (peer == rank_) return putToSelf(window, offset, data, bytes, index, context);
  Outgoing o;
  o.header.index = index;
  o.header.context = context;
  o.header.window = window;
  o.header.offset = offset;
  o.header.bytes = bytes;
  o.data = static_cast<const std::byte*>(data);
  std::unique_lock<std::mutex> lock(mutex_);
  Peer& p = *peers_[peer];
  if (!p.failure.isOk()) return peerError(peer);
  p.outgoing.push_back(&o);
  work_.notify_one();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds());
  // A put the thread has not started is the caller's to withdraw: the thread never touches it again.
  auto withdraw = [&](Status why) {
    p.outgoing.erase(std::find(p.outgoing.begin(), p.outgoing.end(), &o));
    return why;
  };
  while (!o.done) {
    if (!o.started && !p.failure.isOk()) return withdraw(peerError(peer));
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !o.done) {
      if (!o.started) {
        return withdraw(timeoutError("a put of " + std::to_string(bytes) + " bytes to rank " + std::to_string(peer) +
                                     " was not taken within " + formatSeconds(timeoutSeconds()) + " s"));
      }
      // Half written: the stream to the peer is out of step now. Failing the peer makes the thread end the put.
      if (p.failure.isOk()) {
        p.failure = namingPeer(peer, timeoutError("a put to it stalled for " + formatSeconds(timeoutSeconds()) + " s"));
        CHORUS_WARN(kColl, "one-sided channel: %s", p.failure.message().c_str());
      }
      work_.notify_one();
      changed_.wait(lock, [&] { return o.done; });
    }
  }
  return o.result;
}

Status OneSided::wait(std::span<const SignalWait> waits) {
  // Two waits on one signal add up.
  std::map<SignalKey, uint64_t> needed;
  for (const SignalWait& w : waits) needed[{w.peer, w.context, w.index}] += static_cast<uint64_t>(w.count);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds());
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    bool all = true;
    for (const auto& [key, count] : needed) {
      auto it = arrived_.find(key);
      if ((it == arrived_.end() ? 0 : it->second) >= count) continue;
      all = false;
      // Signals that arrived before a failure still count; a missing one from a failed peer never comes.
      const int peer = std::get<0>(key);
      if (!peers_[peer]->failure.isOk()) return peerError(peer);
    }
    if (all) break;
    if (aborted_ && aborted_->load()) return remoteError("the communicator was aborted");
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      for (const SignalWait& w : waits) {
        auto it = arrived_.find({w.peer, w.context, w.index});
        const uint64_t have = it == arrived_.end() ? 0 : it->second;
        if (have < needed[{w.peer, w.context, w.index}]) {
          return timeoutError("timed out after " + formatSeconds(timeoutSeconds()) + " s waiting for " + describe(w) +
                              "; " + std::to_string(have) + " arrived");
        }
      }
    }
  }
  for (const auto& [key, count] : needed) arrived_[key] -= count;
  return Status::ok();
}

Status OneSided::pumpSends(int peer, bool* moved) {
  Peer& p = *peers_[peer];
  transport::Connection& c = *connections_[peer];
  while (true) {
    Outgoing* o = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (p.outgoing.empty()) return Status::ok();
      o = p.outgoing.front();
      if (!p.failure.isOk()) {  // ends every queued put with the peer's failure
        for (Outgoing* q : p.outgoing) {
          q->result = peerError(peer);
          q->done = true;
        }
        p.outgoing.clear();
        changed_.notify_all();
        return Status::ok();
      }
      o->started = true;
    }
    const size_t total = sizeof(Header) + o->header.bytes;
    while (o->sent < total) {
      std::span<std::byte> space = c.sendSpace();
      if (space.empty()) return Status::ok();
      size_t n = std::min(space.size(), total - o->sent);
      size_t at = 0;
      if (o->sent < sizeof(Header)) {
        const size_t h = std::min(n, sizeof(Header) - o->sent);
        std::memcpy(space.data(), reinterpret_cast<const std::byte*>(&o->header) + o->sent, h);
        at = h;
      }
      if (at < n) std::memcpy(space.data() + at, o->data + (o->sent + at - sizeof(Header)), n - at);
      c.commitSend(n);
      o->sent += n;
      *moved = true;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    p.outgoing.pop_front();
    o->done = true;
    changed_.notify_all();
  }
}

Status OneSided::startIncoming(int peer) {
  Incoming& in = peers_[peer]->incoming;
  const Header& h = in.header;
  if (h.magic != kPutMagic) {
    return internalError("its one-sided stream is out of step (a header of magic " + std::to_string(h.magic) + ")");
  }
  in.target = nullptr;
  in.received = 0;
  if (h.bytes == 0) return Status::ok();
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = windows_.find(h.window);
  if (it == windows_.end() && h.window >= windowsAdded_ && h.window != kNoWindow) {
    // The peer registered a window this rank has not yet (registration is collective, but its ranks return at their
    // own pace): the put waits, its stream held, until the window comes or the timeout passes.
    if (!in.waitingForWindow) in.waitingSince = std::chrono::steady_clock::now();
    in.waitingForWindow = true;
    return Status::ok();
  }
  in.waitingForWindow = false;
  if (it == windows_.end() || h.offset > it->second.size() || h.bytes > it->second.size() - h.offset) {
    // Its bytes are dropped and its signal never counts: the wait on this peer reports the put instead.
    const std::string where = it == windows_.end()
                                  ? "window " + std::to_string(h.window) + ", which this rank has not registered"
                                  : "a window of " + std::to_string(it->second.size()) + " bytes";
    Peer& p = *peers_[peer];
    if (p.failure.isOk()) {
      p.failure = namingPeer(peer, invalidArgument("it put " + std::to_string(h.bytes) + " bytes at offset " +
                                                   std::to_string(h.offset) + " of " + where));
      CHORUS_WARN(kColl, "one-sided put refused: %s", p.failure.message().c_str());
      changed_.notify_all();
    }
    return Status::ok();
  }
  in.target = it->second.data() + h.offset;
  return Status::ok();
}

void OneSided::finishIncoming(int peer) {
  Incoming& in = peers_[peer]->incoming;
  const bool dropped = in.header.bytes > 0 && in.target == nullptr;
  in.headerBytes = 0;
  if (dropped) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ++arrived_[{peer, in.header.context, in.header.index}];
  changed_.notify_all();
}

Status OneSided::pumpReceives(int peer, bool* moved) {
  Incoming& in = peers_[peer]->incoming;
  transport::Connection& c = *connections_[peer];
  if (in.waitingForWindow) {
    CHORUS_TRY(startIncoming(peer));
    if (in.waitingForWindow) {
      if (std::chrono::steady_clock::now() - in.waitingSince > std::chrono::duration<double>(timeoutSeconds())) {
        return invalidArgument("it put into window " + std::to_string(in.header.window) +
                               ", which this rank did not register within " + formatSeconds(timeoutSeconds()) + " s");
      }
      return Status::ok();
    }
    *moved = true;
    if (in.header.bytes == 0) finishIncoming(peer);
  }
  while (!in.waitingForWindow) {
    std::span<const std::byte> data = c.recvData();
    if (data.empty()) return Status::ok();
    *moved = true;
    if (in.headerBytes < sizeof(Header)) {
      const size_t n = std::min(data.size(), sizeof(Header) - in.headerBytes);
      std::memcpy(reinterpret_cast<std::byte*>(&in.header) + in.headerBytes, data.data(), n);
      c.consumeRecv(n);
      in.headerBytes += n;
      if (in.headerBytes < sizeof(Header)) continue;
      CHORUS_TRY(startIncoming(peer));
      if (in.header.bytes == 0) finishIncoming(peer);
      continue;
    }
    const size_t n = std::min<size_t>(data.size(), in.header.bytes - in.received);
    if (in.target) std::memcpy(in.target + in.received, data.data(), n);
    c.consumeRecv(n);
    in.received += n;
    if (in.received == in.header.bytes) finishIncoming(peer);
  }
  return Status::ok();
}

// True when every put queued to a live peer left this process: what a destroyed communicator waits for, so that
// the last puts before it reach their targets.
bool OneSided::drained() {
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_) continue;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!peers_[r]->failure.isOk()) continue;
      if (!peers_[r]->outgoing.empty()) return false;
    }
    if (!connections_[r]->sendDrained()) return false;
  }
  return true;
}

void OneSided::progressLoop() {
  auto lastMoved = std::chrono::steady_clock::now();
  auto lastLiveness = lastMoved;
  std::chrono::steady_clock::time_point stopBy{};
  int idle = 0;
  while (true) {
    bool moved = false;
    for (int r = 0; r < nranks_; ++r) {
      if (r == rank_) continue;
      bool failed;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        failed = !peers_[r]->failure.isOk();
      }
      Status st = pumpSends(r, &moved);  // with a failed peer: ends its queued puts
      if (failed) continue;
      if (st.isOk()) st = connections_[r]->progress(&moved);
      if (st.isOk()) st = pumpReceives(r, &moved);
      if (st.isOk() && connections_[r]->peerClosed() && connections_[r]->recvData().empty()) {
        // Where the rank failed rather than ended, a wait on it reports this; an ended rank is no news.
        fail(r, remoteError("it closed its one-sided channel (the rank ended or failed)"), false);
        continue;
      }
      if (!st.isOk()) fail(r, st);
    }
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_ && stopBy == std::chrono::steady_clock::time_point{})
        stopBy = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(timeoutSeconds()));
    }
    if (stopBy != std::chrono::steady_clock::time_point{} && (drained() || now > stopBy)) return;
    if (now - lastLiveness > kLivenessPeriod) {
      lastLiveness = now;
      for (int r = 0; r < nranks_; ++r) {
        if (r == rank_) continue;
        Status st = connections_[r]->checkPeer();
        if (!st.isOk()) fail(r, st);
      }
    }
    if (moved) {
      idle = 0;
      lastMoved = now;
      continue;
    }
    if (++idle < kSpinRounds) continue;
    std::unique_lock<std::mutex> lock(mutex_);
    if (stopping_) continue;
    bool queued = false;
    for (const auto& p : peers_) queued = queued || !p->outgoing.empty();
    if (!queued) work_.wait_for(lock, now - lastMoved > kQuietSpell ? kLongSleep : kShortSleep);
  }
}

}  // namespace chorus

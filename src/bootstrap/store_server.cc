// The store server: one thread, poll() over the listening socket and every client. A client must first send the
// hello with the id's secret within a second; anything else (wrong secret, garbage, oversized lengths, silence)
// closes that connection and is logged, and the server goes on serving the others.
//
// Besides keys, it keeps who is still setting up which communicator: a rank that fails its init, or whose
// connection drops before it said it is ready, fails that communicator's namespace, and every rank waiting on a key
// in it is answered with that cause at once instead of at its timeout. The server ends when the last rank that used
// it has left: the id is then spent.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "bootstrap/root_threads.hpp"
#include "bootstrap/store.hpp"
#include "bootstrap/tls.hpp"
#include "core/deadline.hpp"
#include "core/log.hpp"

namespace chorus::bootstrap {
namespace {

using Clock = std::chrono::steady_clock;

struct Waiter {
  int fd;
  uint64_t sequence;  // of the get it answers
};

struct Client {
  int fd = -1;
  bool authenticated = false;
  bool member = false;  // made a valid request: a rank, not a stray connection
  Clock::time_point helloBy;
  std::string inbox;
  std::map<std::string, int> joining;  // namespaces this client's rank is still setting up, with its rank there
  bool handshaking = false;            // a TLS handshake comes before its hello
};

// Endpoints this process serves, so that a second communicator of a fixed-address id (CHORUS_COMM_ID) in the same
// process finds its root already running instead of failing to bind the port. Never destroyed: a root thread may
// still run while the process exits.
struct Served {
  std::mutex mutex;
  std::set<std::pair<uint32_t, uint16_t>> endpoints;
};
Served& served() {
  static Served* s = new Served;
  return *s;
}

class StoreServer {
 public:
  StoreServer(int listenFd, uint64_t secret, net::Endpoint bound)
      : listenFd_(listenFd), secret_(secret), bound_(bound) {
    net::setNonBlocking(listenFd_);  // accepts until the backlog is empty
  }

  void run() {
    std::vector<pollfd> fds;
    while (!finished()) {
      fds.clear();
      const bool listening = Clock::now() >= acceptPausedUntil_;
      fds.push_back({listening ? listenFd_ : -1, POLLIN, 0});
      for (auto& c : clients_) fds.push_back({c.fd, POLLIN, 0});
      if (pollOutsideForkGate(fds.data(), fds.size(), pollTimeoutMs()) < 0) continue;
      if (fds[0].revents & POLLIN) acceptClients();
      // Iterate over a snapshot of fds: serving may close clients.
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents != 0) serve(fds[i].fd);
      }
      dropSilentClients();
      std::erase_if(clients_, [](const Client& c) { return c.fd < 0; });
    }
    CHORUS_INFO(kBootstrap, "store root %s: every rank left, closing", bound_.toString().c_str());
    for (auto& c : clients_) net::closeFd(c.fd);
    close(listenFd_);  // before the endpoint is given up, so that a new root can bind it
    std::lock_guard<std::mutex> lock(served().mutex);
    served().endpoints.erase({bound_.ip, bound_.port});
  }

 private:
  // Done when every rank that used the root has left, and either every communicator set up through it had all its
  // ranks arrive or a timeout has passed since the last one left: a rank slower than the others (which already
  // failed and left) still gets its answer instead of a root that is gone.
  bool finished() {
    const auto now = Clock::now();
    if (std::any_of(clients_.begin(), clients_.end(), [](const Client& c) { return c.member; })) lastMember_ = now;
    if (!servedMembers_ || lastMember_ == now) return false;
    const bool everyoneArrived = std::all_of(spaces_.begin(), spaces_.end(), [](const auto& entry) {
      return static_cast<int>(entry.second.joined.size()) >= entry.second.nranks;
    });
    return everyoneArrived || now >= lingerEnd();
  }
  Clock::time_point lingerEnd() const {
    return lastMember_ +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(settings()[kTimeout]));
  }

  int pollTimeoutMs() const {
    auto next = Clock::time_point::max();
    for (const auto& c : clients_)
      if (!c.authenticated) next = std::min(next, c.helloBy);
    if (Clock::now() < acceptPausedUntil_) next = std::min(next, acceptPausedUntil_);
    if (servedMembers_) next = std::min(next, lingerEnd());
    if (next == Clock::time_point::max()) return -1;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(ms + 1, 0, 1000));
  }

  void acceptClients() {
    for (int accepted = 0; accepted < 64; ++accepted) {
      int fd = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) {
        net::setNoDelay(fd);
        clients_.push_back(Client{fd, false, false, Clock::now() + net::kHelloWithin, {}, {}, net::tls::enabled()});
        continue;
      }
      if (errno == EMFILE || errno == ENFILE) {
        // Out of descriptors: make room by closing the oldest connection that has not said hello, if any, and
        // look at the listener again a little later rather than at once.
        auto stray = std::find_if(clients_.begin(), clients_.end(), [](const Client& c) { return !c.authenticated; });
        if (stray != clients_.end()) {
          drop(*stray, "out of file descriptors; closed a connection that had not said hello");
        } else {
          CHORUS_WARN(kBootstrap, "store: out of file descriptors (raise ulimit -n); new ranks wait");
        }
        acceptPausedUntil_ = Clock::now() + net::kAcceptBackoff;
      }
      return;
    }
  }

  void dropSilentClients() {
    const auto now = Clock::now();
    for (auto& c : clients_)
      if (c.fd >= 0 && !c.authenticated && now >= c.helloBy) drop(c, "no hello within a second");
  }

  Client* find(int fd) {
    for (auto& c : clients_)
      if (c.fd == fd) return &c;
    return nullptr;
  }

  void drop(Client& c, const char* why) {
    if (why) CHORUS_WARN(kBootstrap, "store: closed a connection: %s", why);
    for (auto& [key, waiters] : waiters_) std::erase_if(waiters, [&](const Waiter& w) { return w.fd == c.fd; });
    net::closeFd(c.fd);
    // A rank that leaves before it finished setting up a communicator fails it for everyone.
    for (const auto& [space, rank] : c.joining)
      fail(space, "rank " + std::to_string(rank) +
                      " left during init (its process ended or closed its rendezvous connection)");
    c.joining.clear();
  }

  void serve(int fd) {
    Client* c = find(fd);
    if (!c) return;
    if (c->handshaking) {
      bool done = false;
      if (Status st = net::tls::handshakeStep(fd, net::tls::Role::kServer, &done); !st.isOk()) {
        drop(*c, st.message().c_str());
        return;
      }
      // A peer whose handshake moves is not silent: each of its flights restarts the hello's clock, so a loaded
      // machine's slow handshake is not dropped (soak_tcp_tls under AddressSanitizer beside other work was).
      c->helloBy = Clock::now() + net::kHelloWithin;
      if (!done) return;
      c->handshaking = false;
    }
    // Until nothing is left: a TLS session may hold bytes that poll() does not show.
    char buf[65536];
    while (c->fd >= 0) {
      ssize_t n = net::tls::recv(fd, buf, sizeof(buf));
      if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) drop(*c, nullptr);
        return;
      }
      c->inbox.append(buf, static_cast<size_t>(n));
      while (c->fd >= 0 && parseOne(*c)) {
      }
    }
  }

  // Handles one complete message from the inbox; returns false when more bytes are needed.
  bool parseOne(Client& c) {
    if (!c.authenticated) {
      if (c.inbox.size() < sizeof(wire::Hello)) return false;
      wire::Hello hello;
      memcpy(&hello, c.inbox.data(), sizeof(hello));
      if (hello.magic != wire::kHelloMagic || hello.secret != secret_) {
        drop(c, "bad handshake (not a chorus peer of this communicator)");
        return false;
      }
      c.authenticated = true;
      c.inbox.erase(0, sizeof(hello));
      return true;
    }
    if (c.inbox.size() < sizeof(wire::RequestHeader)) return false;
    wire::RequestHeader h;
    memcpy(&h, c.inbox.data(), sizeof(h));
    if (h.keyBytes > wire::kMaxKey || h.valueBytes > wire::kMaxValue || h.op < wire::kSet || h.op > wire::kLastOp) {
      drop(c, "malformed request");
      return false;
    }
    size_t total = sizeof(h) + h.keyBytes + h.valueBytes;
    if (c.inbox.size() < total) return false;
    std::string key = c.inbox.substr(sizeof(h), h.keyBytes);
    std::string value = c.inbox.substr(sizeof(h) + h.keyBytes, h.valueBytes);
    c.inbox.erase(0, total);
    c.member = true;
    servedMembers_ = true;
    // Seen here too, not only while connected at the top of the loop: a rank whose whole exchange (hello, join, fail,
    // close) arrives in one pass of a descheduled root is connected at no such check, and the linger would count from
    // the clock's epoch, ending the root before the other ranks arrive.
    lastMember_ = Clock::now();
    handle(c, h.op, h.sequence, key, value);
    return true;
  }

  // The failure of the namespace `key` lies in (a namespace is a prefix ending before a '/'), or null.
  const std::string* failureOf(const std::string& key) const {
    for (const auto& [space, why] : failed_)
      if (key.size() > space.size() && key.compare(0, space.size(), space) == 0 && key[space.size()] == '/')
        return &why;
    return nullptr;
  }

  void fail(const std::string& space, const std::string& why) {
    if (failed_.count(space)) return;  // the first cause is the one to report
    failed_[space] = why;
    CHORUS_INFO(kBootstrap, "store: communicator setup failed: %s", why.c_str());
    std::vector<Waiter> answered;
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (failureOf(it->first)) {
        answered.insert(answered.end(), it->second.begin(), it->second.end());
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
    for (const Waiter& w : answered) reply(w.fd, w.sequence, wire::kFailed, why);
  }

  void handle(Client& c, uint32_t op, uint64_t sequence, const std::string& key, const std::string& value) {
    if (op == wire::kJoin || op == wire::kReady || op == wire::kFail) {
      const std::string space = key;
      if (op == wire::kJoin) {
        // "rank nranks"; anything else counts as a communicator whose arrivals are not awaited.
        int rank = -1, nranks = 0;
        if (sscanf(value.c_str(), "%d %d", &rank, &nranks) != 2 || rank < 0 || nranks <= rank) nranks = 0;
        c.joining[space] = rank;
        Arrivals& arrivals = spaces_[space];
        arrivals.nranks = nranks;
        arrivals.joined.insert(rank);
      }
      if (op == wire::kReady) c.joining.erase(space);
      if (op == wire::kFail) {
        c.joining.erase(space);
        fail(space, value);
      }
      const std::string* cause = failureOf(space + "/");
      reply(c.fd, sequence, cause ? wire::kFailed : wire::kOk, cause ? *cause : "");
      return;
    }
    if (const std::string* cause = failureOf(key)) {
      reply(c.fd, sequence, wire::kFailed, *cause);
      return;
    }
    if (op == wire::kSet) {
      reply(c.fd, sequence, wire::kOk, "");
      store(key, value);
    } else if (op == wire::kSetIfAbsent) {
      auto it = data_.find(key);
      reply(c.fd, sequence, wire::kOk, it != data_.end() ? it->second : value);
      if (it == data_.end()) store(key, value);
    } else if (op == wire::kGet) {
      auto it = data_.find(key);
      if (it != data_.end())
        reply(c.fd, sequence, wire::kOk, it->second);
      else
        waiters_[key].push_back({c.fd, sequence});
    } else {
      int64_t delta = 0, current = 0;
      if (value.size() == sizeof(delta)) memcpy(&delta, value.data(), sizeof(delta));
      auto& stored = data_[key];
      if (stored.size() == sizeof(current)) memcpy(&current, stored.data(), sizeof(current));
      current += delta;
      stored.assign(reinterpret_cast<const char*>(&current), sizeof(current));
      reply(c.fd, sequence, wire::kOk, stored);
    }
  }

  // Sets `key` and answers the gets waiting for it.
  void store(const std::string& key, const std::string& value) {
    data_[key] = value;
    auto it = waiters_.find(key);
    if (it == waiters_.end()) return;
    std::vector<Waiter> answered = std::move(it->second);
    waiters_.erase(it);
    for (const Waiter& w : answered) reply(w.fd, w.sequence, wire::kOk, value);
  }

  // Replies to the client on `fd`, if it is still there (an earlier reply may have dropped it).
  void reply(int fd, uint64_t sequence, uint32_t status, const std::string& value) {
    if (!find(fd)) return;
    wire::ReplyHeader h{status, 0, value.size(), sequence};
    std::string message(reinterpret_cast<const char*>(&h), sizeof(h));  // one send: the reply arrives whole
    message += value;
    if (!net::sendAll(fd, message.data(), message.size(), Deadline::after(10)).isOk()) {
      if (Client* c = find(fd)) drop(*c, "client stopped reading replies");
    }
  }

  int listenFd_;
  uint64_t secret_;
  net::Endpoint bound_;
  std::vector<Client> clients_;
  bool servedMembers_ = false;
  Clock::time_point lastMember_;  // when a rank was last connected
  struct Arrivals {
    int nranks = 0;
    std::set<int> joined;
  };
  std::map<std::string, Arrivals> spaces_;  // communicators set up through this root, by namespace
  Clock::time_point acceptPausedUntil_;
  std::map<std::string, std::string> data_;
  std::map<std::string, std::vector<Waiter>> waiters_;  // key -> clients whose get waits for it
  std::map<std::string, std::string> failed_;           // namespace -> the first cause
};

}  // namespace

Status startStoreServer(uint32_t ip, uint16_t port, uint64_t secret, net::Endpoint* bound) {
  std::lock_guard<std::mutex> lock(served().mutex);
  if (port != 0 && served().endpoints.count({ip, port})) {
    *bound = net::Endpoint{ip, port};
    return Status::ok();
  }
  int fd = -1;
  CHORUS_TRY(net::listenOn(ip, port, &fd, bound));
  served().endpoints.insert({bound->ip, bound->port});
  startRootThread([fd, secret, at = *bound] {
    StoreServer server(fd, secret, at);
    server.run();
  });
  CHORUS_INFO(kBootstrap, "store root listening on %s", bound->toString().c_str());
  return Status::ok();
}

}  // namespace chorus::bootstrap
